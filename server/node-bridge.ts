import type { IncomingMessage, ServerResponse } from 'node:http';
import { isStreamReply, payloadTooLarge, type McpHttpRequest, type McpReply } from '@/lib/mcp/http/exchange';
import { sseHeaders, type SseSink, type SseStream } from '@/lib/mcp/http/sse';
import { jsonBodyText } from '@/lib/mcp/core/json-text';

/**
 * Node's request as lib/mcp's handler reads it, with nothing converted that the handler does not
 * ask for: headers are read from Node's own object, the body is read only on request, and the signal
 * (an AbortController per request is not free) is made only when something listens to it. A class, not
 * an object literal: V8 gives each literal with a getter of its own a hidden class of its own, made
 * where only a full collection frees it.
 */
class NodeMcpRequest implements McpHttpRequest {
  readonly method: string;
  #signal: AbortSignal | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
  ) {
    this.method = req.method ?? 'GET';
  }

  header(name: string): string | null {
    const value = this.req.headers[name];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  }

  text(maxBytes: number): Promise<string> {
    return readNodeBody(this.req, maxBytes);
  }

  get signal(): AbortSignal {
    if (!this.#signal) {
      const gone = new AbortController();
      const abort = () => gone.abort(new DOMException('The client closed the connection', 'AbortError'));
      const res = this.res;
      if (res.closed) abort();
      else res.once('close', () => !res.writableFinished && abort());
      this.#signal = gone.signal;
    }
    return this.#signal;
  }
}

export function fromNodeRequest(req: IncomingMessage, res: ServerResponse): McpHttpRequest {
  return new NodeMcpRequest(req, res);
}

/**
 * The body as text. Past `maxBytes` it is refused at once (413); Node drains and drops the rest, so
 * the connection stays usable.
 */
function readNodeBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(payloadTooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let received = 0;
    // The request lives as long as its response, an event stream for hours perhaps: the listeners (and
    // the chunks they hold) go once the body is read.
    const done = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError);
      chunks = [];
    };
    const onData = (chunk: Buffer) => {
      received += chunk.byteLength;
      if (received <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      done();
      req.resume();
      reject(payloadTooLarge(maxBytes));
    };
    const onEnd = () => {
      const text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8');
      done();
      // As a Web body's text() does: a byte-order mark is not part of the text.
      resolve(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    };
    const onError = (error: Error) => {
      done();
      reject(error);
    };
    req.on('data', onData).once('end', onEnd).once('error', onError);
  });
}

/**
 * An event stream's way to a Node response. Its methods are the sink and the close handler: every open
 * stream holds one, and thousands may be open.
 */
class NodeSseSink implements SseSink {
  constructor(
    private readonly res: ServerResponse,
    private readonly stream: SseStream,
  ) {
    res.once('close', this.closed);
  }

  write(chunk: string): void {
    this.res.write(chunk);
  }

  end(): void {
    this.res.end();
  }

  /** The client has gone (or the response ended): the stream writes no more. */
  private readonly closed = () => this.stream.abandon();
}

/** Writes the handler's reply: a JSON body in one write with its length, or an event stream as it comes. */
export function sendReply(reply: McpReply, res: ServerResponse): void {
  if (isStreamReply(reply)) {
    // Sent alone, the head is written as it stands, which flattens it: node:http builds it as some thirty
    // concatenated strings, and a stream keeps it as long as it is open (about 0.5 KB less a stream).
    res.writeHead(reply.status, { ...sseHeaders, ...reply.headers }).flushHeaders();
    // The handler read what it needed of the request's headers before it replied. Node keeps each header
    // (its name and value as sent, and the lower-cased table made from them) as long as the request, which
    // an event stream keeps for as long as it is open (about 1.5 KB a stream with a common client's headers).
    res.req.rawHeaders = [];
    // Node makes both tables when first read, from rawHeaders and the count of headers it parsed: each is
    // set now, so that neither is made from the emptied list.
    res.req.headers = {};
    res.req.headersDistinct = {};
    reply.stream.attach(new NodeSseSink(res, reply.stream));
    return;
  }
  if (reply.json === undefined) {
    res.writeHead(reply.status, reply.headers).end();
    return;
  }
  const body = jsonBodyText(reply.json);
  res.writeHead(reply.status, { ...reply.headers, 'Content-Length': Buffer.byteLength(body) }).end(body);
}
