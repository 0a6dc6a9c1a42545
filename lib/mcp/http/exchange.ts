import { ErrorCode, HttpError } from '../core/errors';
import { jsonBodyText } from '../core/json-text';
import type { SseStream } from './sse';

/**
 * One request to /mcp as the handler reads it, whichever server carries it: the production server
 * passes Node's request straight in, a route handler passes the Web `Request` (`fromWebRequest`).
 */
export interface McpHttpRequest {
  readonly method: string;
  /** A header's value (name in lower case), or null when it is absent. */
  header(name: string): string | null;
  /** The body as text; an HttpError 413 as soon as it passes `maxBytes`. */
  text(maxBytes: number): Promise<string>;
  /** Aborts when the client goes away before the reply is complete. */
  readonly signal: AbortSignal;
}

/** The handler's answer: a JSON body (or none), or an event stream. */
export type McpReply =
  | { status: number; headers: Record<string, string>; json?: unknown }
  | { status: 200; headers: Record<string, string>; stream: SseStream };

export const isStreamReply = (reply: McpReply): reply is Extract<McpReply, { stream: SseStream }> => 'stream' in reply;

export function payloadTooLarge(maxBytes: number): HttpError {
  return new HttpError(413, ErrorCode.InvalidRequest, `Payload Too Large: the body exceeds the limit of ${maxBytes} bytes`);
}

/** Reads a Web body, refusing (413) as soon as it passes the limit rather than after buffering it all. */
async function readWebBody(request: Request, maxBytes: number): Promise<string> {
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) throw payloadTooLarge(maxBytes);
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    received += value.byteLength;
    if (received > maxBytes) {
      await reader.cancel().catch(() => {});
      throw payloadTooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

export function fromWebRequest(request: Request): McpHttpRequest {
  return {
    method: request.method,
    header: (name) => request.headers.get(name),
    text: (maxBytes) => readWebBody(request, maxBytes),
    signal: request.signal,
  };
}

export function toWebResponse(reply: McpReply): Response {
  if (isStreamReply(reply)) return reply.stream.response(reply.headers);
  return new Response(reply.json === undefined ? null : jsonBodyText(reply.json), { status: reply.status, headers: reply.headers });
}
