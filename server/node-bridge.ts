import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Node's request as the Web `Request` that lib/mcp takes, with the body read here first: a buffered
 * body is much cheaper for undici than a Node stream turned into a Web stream. Past `maxBodyBytes`
 * the rest is drained and dropped, so the handler still sees an oversized body and answers 413. The
 * signal aborts when the client goes away before the response is done, as a route handler's does.
 */
export async function toWebRequest(req: IncomingMessage, res: ServerResponse, origin: string, maxBodyBytes: number): Promise<Request> {
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) gone.abort(new DOMException('The client closed the connection', 'AbortError'));
  });
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return new Request(new URL(req.url ?? '/', origin), {
    method: req.method,
    headers,
    body: hasBody ? await readBody(req, maxBodyBytes + 1) : undefined,
    signal: gone.signal,
  });
}

async function readBody(req: IncomingMessage, keepBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const chunks: Buffer[] = [];
  let kept = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    if (kept >= keepBytes) continue;
    const part = chunk.subarray(0, keepBytes - kept);
    chunks.push(part);
    kept += part.byteLength;
  }
  return Buffer.concat(chunks) as Uint8Array<ArrayBuffer>;
}

/** Writes a Web `Response` to Node's response, chunk by chunk so that event streams flush at once. */
export async function sendWebResponse(response: Response, res: ServerResponse): Promise<void> {
  res.statusCode = response.status;
  response.headers.forEach((value, name) => res.setHeader(name, value));
  if (!response.body) {
    res.end();
    return;
  }
  if (!response.headers.get('content-type')?.startsWith('text/event-stream')) {
    // A whole reply: headers and body leave in one write, with a Content-Length.
    const body = Buffer.from(await response.arrayBuffer());
    res.setHeader('Content-Length', body.byteLength);
    res.end(body);
    return;
  }
  const reader = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => {}));
  res.flushHeaders();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
    }
  } catch {
    // The client went away mid-stream; the reader is already cancelled.
  }
  res.end();
}
