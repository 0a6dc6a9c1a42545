import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { fromNodeRequest, sendReply } from '@/server/node-bridge';
import { SseStream } from '@/lib/mcp/http/sse';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve).closeAllConnections())));
});

/** A real node:http server whose every request is answered by `answer`, which sees the request as the handler does. */
async function serve(answer: (request: ReturnType<typeof fromNodeRequest>, req: IncomingMessage) => Parameters<typeof sendReply>[0], seen: IncomingMessage[]) {
  const server = http.createServer((req, res) => {
    seen.push(req);
    sendReply(answer(fromNodeRequest(req, res), req), res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('the Node bridge', () => {
  it('lets an event stream go of its request headers once it is sent, and still streams', async () => {
    const seen: IncomingMessage[] = [];
    const stream = new SseStream();
    let readBeforeReply: string | null = null;
    const url = await serve((request) => {
      readBeforeReply = request.header('x-session');
      return { status: 200, headers: { 'X-Reply': 'streamed' }, stream };
    }, seen);
    const response = await fetch(url, { headers: { 'X-Session': 'session-one', Authorization: 'Bearer secret-token' } });
    expect(readBeforeReply).toBe('session-one');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-reply')).toBe('streamed');
    // The open stream's request keeps no header, neither as sent nor as the lower-cased table.
    expect(seen[0].rawHeaders).toEqual([]);
    expect(seen[0].headers).toEqual({});
    expect(seen[0].headersDistinct).toEqual({});
    stream.send({ jsonrpc: '2.0', id: 1, result: {} }, 7);
    stream.close();
    const text = await response.text();
    expect(text).toContain(': stream open');
    expect(text).toContain('id: 7\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n');
  });

  it('leaves the headers of a request answered at once as they were', async () => {
    const seen: IncomingMessage[] = [];
    const url = await serve(() => ({ status: 200, headers: {}, json: { ok: true } }), seen);
    const response = await fetch(url, { headers: { 'X-Session': 'session-two' } });
    expect(await response.json()).toEqual({ ok: true });
    expect(response.headers.get('content-length')).toBe('11');
    expect(seen[0].headers['x-session']).toBe('session-two');
    expect(seen[0].rawHeaders).toContain('session-two');
  });
});
