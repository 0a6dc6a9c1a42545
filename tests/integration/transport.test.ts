import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawMcp, SseReader } from '../helpers/mcp';
import { createToken, heapAfterGcEnv, revokeToken, startServer, youngGenerationKib, type TestServer } from '../helpers/server';
import { bearerChallenge } from '../helpers/www-authenticate';

let server: TestServer;
/** README: a revoked token's open streams end within two seconds, whichever process revoked it. */
const revokedStreamEndsWithinMs = 2000;
let token: string;
let otherToken: string;

beforeAll(async () => {
  server = await startServer({ MCP_MAX_BODY_BYTES: '4096' });
  token = createToken(server, 'ada@example.com');
  otherToken = createToken(server, 'bob@example.com');
});

afterAll(async () => {
  await server?.stop();
});

async function session(): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  return mcp;
}

describe('authentication', () => {
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };

  // RFC 6750 section 3.1: a request that carries no bearer token gets a challenge without an error code.
  it.each([
    ['no Authorization header', null],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
  ])('refuses a request with %s with 401 and a Bearer challenge without an error', async (_label, authorization) => {
    const response = await fetch(server.mcpUrl, {
      method: 'POST',
      headers: { ...(authorization ? { Authorization: authorization } : {}), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify(initialize),
    });
    expect(response.status).toBe(401);
    const challenge = bearerChallenge(response.headers.get('www-authenticate'));
    expect(challenge.error).toBeUndefined();
    expect(challenge.resource_metadata).toMatch(/\/\.well-known\/oauth-protected-resource\/mcp$/);
    expect((await response.json()).error.message).toMatch(/access token is required/);
  });

  it.each([
    ['malformed', 'Bearer not-a-token', /malformed/],
    ['unknown', `Bearer mcp_pat_${'A'.repeat(43)}`, /not valid/],
  ])('refuses a %s token with 401 and error="invalid_token"', async (_label, authorization, message) => {
    const response = await fetch(server.mcpUrl, {
      method: 'POST',
      headers: { Authorization: authorization, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify(initialize),
    });
    expect(response.status).toBe(401);
    expect(bearerChallenge(response.headers.get('www-authenticate')).error).toBe('invalid_token');
    expect((await response.json()).error.message).toMatch(message);
  });

  it('refuses a revoked token at once, on a session it had opened', async () => {
    const doomed = createToken(server, 'ada@example.com', 'doomed');
    const mcp = new RawMcp(server.mcpUrl, doomed);
    await mcp.initialize();
    expect((await mcp.request('ping')).status).toBe(200);
    expect(revokeToken(server, doomed).status).toBe(0);
    const after = await mcp.request('ping');
    expect(after.status).toBe(401);
    expect(bearerChallenge(after.headers.get('www-authenticate'))).toMatchObject({ error: 'invalid_token', error_description: expect.stringContaining('revoked') });
    expect(revokeToken(server, doomed).status).not.toBe(0);
  });

  it('refuses an expired token', async () => {
    const expiring = createToken(server, 'ada@example.com', 'expiring');
    const mcp = new RawMcp(server.mcpUrl, expiring);
    await mcp.initialize();
    server.db().prepare("UPDATE access_tokens SET expires_at = ? WHERE name = 'expiring'").run(Date.now() - 1000);
    const reply = await mcp.request('ping');
    expect(reply.status).toBe(401);
    expect(bearerChallenge(reply.headers.get('www-authenticate'))).toMatchObject({ error: 'invalid_token', error_description: expect.stringContaining('expired') });
  });

  it('stores tokens only as hashes', () => {
    expect(token).toMatch(/^mcp_pat_[A-Za-z0-9_-]{43}$/);
    const rows = server.db().prepare('SELECT * FROM access_tokens').all() as Array<Record<string, unknown>>;
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows.map((row) => row.token_hash)).toContain(createHash('sha256').update(token).digest('hex'));
    // The secret part of the token is nowhere in the database: not in a column, not in the file or its log.
    const secret = token.slice('mcp_pat_'.length);
    expect(JSON.stringify(rows)).not.toContain(secret);
    for (const file of [server.dbPath, `${server.dbPath}-wal`].filter((path) => fs.existsSync(path))) {
      expect(fs.readFileSync(file).includes(secret)).toBe(false);
    }
  });
});

describe('HTTP framing', () => {
  it('refuses a foreign Origin with 403 and accepts its own, and, on loopback, a local inspector on another port', async () => {
    const mcp = await session();
    expect((await mcp.request('ping', undefined, { Origin: 'https://evil.example' })).status).toBe(403);
    expect((await mcp.request('ping', undefined, { Origin: 'http://localhost.evil.example' })).status).toBe(403);
    expect((await mcp.request('ping', undefined, { Origin: server.url })).status).toBe(200);
    expect((await mcp.request('ping', undefined, { Origin: 'http://localhost:6274' })).status).toBe(200);
  });

  it('answers a wrong Content-Type with 415', async () => {
    const mcp = await session();
    const response = await mcp.post('{"jsonrpc":"2.0","id":1,"method":"ping"}', { 'Content-Type': 'text/plain' });
    expect(response.status).toBe(415);
  });

  it('answers an Accept without both JSON and SSE with 406', async () => {
    const mcp = await session();
    expect((await mcp.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { Accept: 'application/json' })).status).toBe(406);
    expect((await mcp.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { Accept: 'text/event-stream' })).status).toBe(406);
  });

  it('answers unparseable JSON with -32700', async () => {
    const mcp = await session();
    const response = await mcp.post('{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(response.status).toBe(400);
    expect((await response.json()).error.code).toBe(-32700);
  });

  it('answers a batch with -32600', async () => {
    const mcp = await session();
    const response = await mcp.post([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body.error.code).toBe(-32600);
    expect(body.error.message).toMatch(/batch/i);
  });

  it('answers a message that is not JSON-RPC with -32600', async () => {
    const mcp = await session();
    for (const bad of [{ id: 1, method: 'ping' }, { jsonrpc: '2.0', id: null, method: 'ping' }, 42, { jsonrpc: '2.0', id: 1, method: 7 }]) {
      const response = await mcp.post(bad);
      expect(response.status).toBe(400);
      expect((await response.json()).error.code).toBe(-32600);
    }
  });

  it('answers a body over the limit with 413 and keeps serving', async () => {
    const mcp = await session();
    const big = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x'.repeat(5000) } } };
    const response = await mcp.post(big);
    expect(response.status).toBe(413);
    expect((await response.json()).error.message).toMatch(/4096 bytes/);
    expect((await mcp.request('ping')).status).toBe(200);
  });

  it('reads a body sent in chunks without a length, and refuses one that grows past the limit', async () => {
    const mcp = await session();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const postInChunks = (chunks: string[]) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = http.request(server.mcpUrl, { method: 'POST', agent, headers: mcp.headers({ 'Transfer-Encoding': 'chunked' }) }, (response) => {
          let body = '';
          response.setEncoding('utf8').on('data', (chunk) => (body += chunk)).on('end', () => resolve({ status: response.statusCode!, body }));
        });
        request.on('error', reject);
        for (const chunk of chunks) request.write(chunk);
        request.end();
      });
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 'chunked', method: 'ping' });
    const whole = await postInChunks(['\uFEFF', ping.slice(0, 10), ping.slice(10)]);
    expect(whole.status).toBe(200);
    expect(JSON.parse(whole.body)).toEqual({ jsonrpc: '2.0', id: 'chunked', result: {} });
    const tooBig = await postInChunks([`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`, 'x'.repeat(3000), 'x'.repeat(3000), '"}}']);
    expect(tooBig.status).toBe(413);
    expect(JSON.parse(tooBig.body).error.message).toMatch(/4096 bytes/);
    // The same connection still serves the next request.
    expect((await postInChunks([ping])).status).toBe(200);
    agent.destroy();
  });

  it('answers other HTTP methods with 405', async () => {
    const response = await fetch(server.mcpUrl, { method: 'PUT', headers: { Authorization: `Bearer ${token}` } });
    expect(response.status).toBe(405);
  });

  it('answers notifications and responses with 202 and no body', async () => {
    const mcp = await session();
    const notification = await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } });
    expect(notification.status).toBe(202);
    expect(await notification.text()).toBe('');
    const response = await mcp.post({ jsonrpc: '2.0', id: 'server-1', result: {} });
    expect(response.status).toBe(202);
  });
});

describe('sessions and versions', () => {
  it('gives initialize a random session id bound to the user', async () => {
    const a = await session();
    const b = await session();
    expect(a.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.sessionId).not.toBe(b.sessionId);
    const row = server.db().prepare('SELECT client_name, protocol_version FROM mcp_sessions WHERE id = ?').get(a.sessionId) as any;
    expect(row).toEqual({ client_name: 'raw-test', protocol_version: '2025-11-25' });
  });

  it('requires Mcp-Session-Id after initialize (400) and refuses unknown ones (404)', async () => {
    const mcp = await session();
    const withoutSession = await mcp.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'Mcp-Session-Id': '' });
    expect(withoutSession.status).toBe(400);
    const unknown = await mcp.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'Mcp-Session-Id': crypto.randomUUID() });
    expect(unknown.status).toBe(404);
  });

  it("refuses another user's session with 404", async () => {
    const mine = await session();
    const theirs = new RawMcp(server.mcpUrl, otherToken);
    theirs.sessionId = mine.sessionId;
    expect((await theirs.request('ping')).status).toBe(404);
  });

  it('ends a session on DELETE; later requests get 404', async () => {
    const mcp = await session();
    const ended = await fetch(server.mcpUrl, { method: 'DELETE', headers: mcp.headers() });
    expect(ended.status).toBe(200);
    expect((await mcp.request('ping')).status).toBe(404);
    expect((await fetch(server.mcpUrl, { method: 'DELETE', headers: mcp.headers() })).status).toBe(404);
  });

  it('refuses an unsupported MCP-Protocol-Version with 400', async () => {
    const mcp = await session();
    const reply = await mcp.request('ping', undefined, { 'MCP-Protocol-Version': '1999-01-01' });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toMatch(/2025-11-25/);
  });

  it('negotiates 2025-11-25 with tasks, and serves older clients without them', async () => {
    const latest = new RawMcp(server.mcpUrl, token);
    const result = await latest.initialize();
    expect(result.protocolVersion).toBe('2025-11-25');
    expect(result.capabilities.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });

    const older = new RawMcp(server.mcpUrl, token);
    const olderResult = await older.initialize('2025-06-18');
    expect(olderResult.protocolVersion).toBe('2025-06-18');
    expect(olderResult.capabilities.tasks).toBeUndefined();
    expect((await older.error('tasks/list')).code).toBe(-32601);
    // "task" is ignored for a client without tasks: the call is answered normally.
    const plain = await older.call('tools/call', { name: 'delay', arguments: { seconds: 0 }, task: {} });
    expect(plain.content[0].text).toMatch(/Waited 0 s/);
    expect(plain.task).toBeUndefined();

    const unknown = new RawMcp(server.mcpUrl, token);
    expect((await unknown.initialize('2030-01-01')).protocolVersion).toBe('2025-11-25');
  });

  it('ignores task metadata, even malformed, for a client without tasks', async () => {
    const older = new RawMcp(server.mcpUrl, token);
    await older.initialize('2025-06-18');
    const result = await older.call('tools/call', { name: 'echo', arguments: { text: 'hi' }, task: { ttl: -5 } });
    expect(result.content[0].text).toBe('hi');
  });

  it('accepts JSON-RPC batches from 2025-03-26 clients only', async () => {
    const older = new RawMcp(server.mcpUrl, token);
    await older.initialize('2025-03-26');
    const response = await older.post([
      { jsonrpc: '2.0', id: 'a', method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'zzz' } },
      { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'echo', arguments: { text: 'batched' } } },
      { jsonrpc: '2.0', id: 'c', method: 'tasks/list' },
      { nonsense: true },
    ], { 'MCP-Protocol-Version': '2025-03-26' });
    expect(response.status).toBe(200);
    const replies = await response.json();
    expect(replies).toEqual([
      { jsonrpc: '2.0', id: 'a', result: {} },
      { jsonrpc: '2.0', id: 'b', result: { content: [{ type: 'text', text: 'batched' }] } },
      { jsonrpc: '2.0', id: 'c', error: { code: -32601, message: 'Method not found: tasks/list' } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/^Invalid Request/) } },
    ]);
    const onlyNotifications = await older.post([{ jsonrpc: '2.0', method: 'notifications/initialized' }], { 'MCP-Protocol-Version': '2025-03-26' });
    expect(onlyNotifications.status).toBe(202);
    const empty = await older.post([], { 'MCP-Protocol-Version': '2025-03-26' });
    expect(empty.status).toBe(400);
    expect((await empty.json()).error.code).toBe(-32600);
  });

  it('sends no priming event to clients before 2025-11-25', async () => {
    const older = new RawMcp(server.mcpUrl, token);
    await older.initialize('2025-06-18');
    const stream = await older.openGetStream();
    await expect(stream.next(700)).rejects.toThrow(/timed out/);
    await stream.close();
  });

  it('answers initialize with bad params with -32602 naming the field', async () => {
    const mcp = new RawMcp(server.mcpUrl, token);
    const response = await mcp.post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } });
    const body = await response.json();
    expect(body.error.code).toBe(-32602);
    expect(body.error.message).toMatch(/clientInfo/);
    expect(response.headers.get('mcp-session-id')).toBeNull();
  });
});

describe('methods', () => {
  it('answers ping', async () => {
    const mcp = await session();
    expect(await mcp.call('ping')).toEqual({});
  });

  it('answers an unknown method with -32601', async () => {
    const mcp = await session();
    const error = await mcp.error('resources/frobnicate');
    expect(error.code).toBe(-32601);
    expect(error.message).toMatch(/resources\/frobnicate/);
  });

  it('lists tools with JSON Schema inputs and task support', async () => {
    const mcp = await session();
    const { tools } = await mcp.call('tools/list');
    const delay = tools.find((tool: any) => tool.name === 'delay');
    const echo = tools.find((tool: any) => tool.name === 'echo');
    expect(delay.execution).toEqual({ taskSupport: 'optional' });
    expect(delay.inputSchema).toMatchObject({
      type: 'object',
      properties: { seconds: { type: 'number', minimum: 0, maximum: 3600 }, fail: { type: 'boolean' } },
      required: ['seconds'],
    });
    expect(echo.execution).toBeUndefined();
    expect(echo.inputSchema.required).toEqual(['text']);
  });

  it('ignores "task" on a request type without task support', async () => {
    const mcp = await session();
    const { tools } = await mcp.call('tools/list', { task: { ttl: 1000 } });
    expect(tools.length).toBeGreaterThan(0);
  });

  it('calls echo directly, and refuses it as a task with -32601', async () => {
    const mcp = await session();
    expect(await mcp.call('tools/call', { name: 'echo', arguments: { text: 'hello' } })).toEqual({ content: [{ type: 'text', text: 'hello' }] });
    const error = await mcp.error('tools/call', { name: 'echo', arguments: { text: 'hello' }, task: {} });
    expect(error.code).toBe(-32601);
    expect(error.message).toMatch(/echo/);
  });

  it('answers bad params with -32602 naming the field', async () => {
    const mcp = await session();
    const missingName = await mcp.error('tools/call', { arguments: {} });
    expect(missingName.code).toBe(-32602);
    expect(missingName.message).toMatch(/name/);
    const wrongType = await mcp.error('tasks/get', { taskId: 42 });
    expect(wrongType.code).toBe(-32602);
    expect(wrongType.message).toMatch(/taskId/);
    const badTtl = await mcp.error('tools/call', { name: 'delay', arguments: { seconds: 1 }, task: { ttl: 'soon' } });
    expect(badTtl.code).toBe(-32602);
    expect(badTtl.message).toMatch(/task\.ttl/);
    const unknownTool = await mcp.error('tools/call', { name: 'nope', arguments: {} });
    expect(unknownTool.code).toBe(-32602);
    expect(unknownTool.message).toMatch(/Unknown tool: nope/);
  });

  it('returns invalid tool arguments as an isError result the model can read', async () => {
    const mcp = await session();
    const result = await mcp.call('tools/call', { name: 'delay', arguments: { seconds: 'ten' } });
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toMatch(/seconds/);
  });

  it('streams progress of a plain call on its POST response when a progressToken is given', async () => {
    const mcp = await session();
    const response = await mcp.post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'delay', arguments: { seconds: 1.1 }, _meta: { progressToken: 'plain-1' } } });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const { SseReader } = await import('../helpers/mcp');
    const reader = new SseReader(response);
    const messages = [];
    for (let message = await reader.nextMessage(); message; message = await reader.nextMessage()) messages.push(message);
    const progress = messages.filter((message) => message.method === 'notifications/progress');
    expect(progress.map((message: any) => message.params.progress)).toEqual([0.5, 1, 1.1]);
    expect(progress.every((message: any) => message.params.progressToken === 'plain-1' && message.params.total === 1.1)).toBe(true);
    const last: any = messages.at(-1);
    expect(last.id).toBe(7);
    expect(last.result.content[0].text).toMatch(/Waited 1.1 s/);
  });

  it('reports progress that always increases and ends at the total', async () => {
    const mcp = await session();
    const response = await mcp.post({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'delay', arguments: { seconds: 1.02 }, _meta: { progressToken: 'odd' } } });
    const { SseReader } = await import('../helpers/mcp');
    const reader = new SseReader(response);
    const values: number[] = [];
    for (let message = await reader.nextMessage(); message; message = await reader.nextMessage()) {
      if (message.method === 'notifications/progress') values.push(message.params.progress);
    }
    expect(values).toEqual([0.5, 1, 1.02]);
  });
});

describe('cancellation and revocation', () => {
  it('sends no response to a request the client cancelled, and stops its work', async () => {
    const mcp = await session();
    const response = await mcp.post({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 10 }, _meta: { progressToken: 'p' } } });
    const { SseReader } = await import('../helpers/mcp');
    const reader = new SseReader(response);
    const progress = await reader.nextMessage();
    expect(progress?.method).toBe('notifications/progress');
    expect((await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'changed my mind' } })).status).toBe(202);
    const started = Date.now();
    for (let message = await reader.nextMessage(); message; message = await reader.nextMessage()) {
      expect(message.id).toBeUndefined();
    }
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('cuts off a POST stream (a waiting tasks/result) when its token is revoked', async () => {
    const doomed = createToken(server, 'ada@example.com', 'post-stream-doomed');
    const mcp = new RawMcp(server.mcpUrl, doomed);
    await mcp.initialize();
    const task = await mcp.startDelayTask(120);
    const response = await mcp.post({ jsonrpc: '2.0', id: 'waiting', method: 'tasks/result', params: { taskId: task.taskId } });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = new SseReader(response);
    expect(revokeToken(server, doomed).status).toBe(0);
    // The token CLI is another process: README promises the stream ends within two seconds of its revocation.
    const deadline = Date.now() + revokedStreamEndsWithinMs;
    for (let message = await reader.nextMessage(revokedStreamEndsWithinMs); message; message = await reader.nextMessage(deadline - Date.now())) {
      expect(message.id).not.toBe('waiting');
    }
  });

  it('cuts off open streams when their token is revoked', async () => {
    const doomed = createToken(server, 'ada@example.com', 'stream-doomed');
    const mcp = new RawMcp(server.mcpUrl, doomed);
    await mcp.initialize();
    const stream = await mcp.openGetStream();
    await stream.next();
    expect(revokeToken(server, doomed).status).toBe(0);
    expect(await stream.next(revokedStreamEndsWithinMs)).toBeNull();
  });
});

describe('the GET stream', () => {
  it('needs Accept: text/event-stream (406) and a session (400)', async () => {
    const mcp = await session();
    expect((await fetch(server.mcpUrl, { method: 'GET', headers: mcp.headers({ Accept: 'application/json' }) })).status).toBe(406);
    const noSession = mcp.headers({ Accept: 'text/event-stream' });
    delete noSession['Mcp-Session-Id'];
    expect((await fetch(server.mcpUrl, { method: 'GET', headers: noSession })).status).toBe(400);
  });

  it('opens with a priming event id and the SSE headers, a new id on every stream', async () => {
    const mcp = await session();
    const stream = await mcp.openGetStream();
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream');
    expect(stream.response.headers.get('cache-control')).toBe('no-cache, no-transform');
    const priming = await stream.next();
    expect(priming).toEqual({ id: expect.stringMatching(/^get:\d+$/), data: '' });
    await stream.close();
    // Event ids are unique across all of a session's streams, priming events included.
    const again = await mcp.openGetStream();
    const secondPriming = await again.next();
    expect(secondPriming?.data).toBe('');
    const rowOf = (id: string | undefined) => Number(id?.slice('get:'.length));
    expect(rowOf(secondPriming?.id)).toBeGreaterThan(rowOf(priming?.id));
    await again.close();
  });
});

describe('the process', () => {
  // Next loads pages and routes in the background once prepared; a load balancer's first health check
  // then waited behind it (over two seconds with three instances starting on two cores) and took the
  // instance out of rotation. npm start listens once they are loaded, through Next's private fields.
  it('npm start listens only once every page and route is loaded', async () => {
    const started = await startServer({}, 'production-server');
    try {
      const health = await fetch(`${started.url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok' });
      expect(started.output()).toContain('MCP endpoint:');
      expect(started.output()).not.toContain('load on their first request');
    } finally {
      await started.stop();
    }
  });

  // README (Memory): Node 24 sizes V8's young generation from the machine's memory (128 MiB on 24 GiB,
  // 100 MiB more resident with ten thousand waiters); npm start keeps it at Node 20's 32 MiB.
  it("keeps V8's young generation at 32 MiB under npm start, on every Node version", async () => {
    const started = await startServer(heapAfterGcEnv(), 'production-server');
    try {
      const mcp = new RawMcp(started.mcpUrl, createToken(started, 'young@example.com'));
      await mcp.initialize();
      for (let round = 0; round < 20; round += 1) {
        await Promise.all(Array.from({ length: 10 }, async () => expect((await mcp.call('tools/list')).tools.length).toBeGreaterThan(0)));
      }
      const young = await youngGenerationKib(started);
      expect(young).toBeGreaterThan(0);
      expect(young).toBeLessThanOrEqual(32 * 1024);
    } finally {
      await started.stop();
    }
  });
});
