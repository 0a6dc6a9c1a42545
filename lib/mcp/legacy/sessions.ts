import { getMcpSessionById, touchMcpSession, type McpSession } from '@/db/queries/sessions';
import { storageTroubleIn } from '@/lib/storage/trouble';
import type { McpContext } from '../core/context';
import { ErrorCode, HttpError, isRpcError, storageRefusal, type JsonRpcErrorObject } from '../core/errors';
import type { McpHttpRequest, McpReply } from '../http/exchange';
import type { RequestFacts } from '../http/request-facts';
import type { SseStream } from '../http/sse';
import { inFlight, shuttingDown } from '../http/in-flight';
import { forgetAnsweredCopies } from './input-requests';
import { unlessStorageTrouble } from '@/lib/storage/persist';

/**
 * What the legacy layer's parts share: the session a request names, the end of a session's work, and
 * how a request's response or error is written.
 */

const sessionHeader = 'mcp-session-id';

/** How often a session's last use is written: idle expiry needs minutes, not milliseconds. */
const sessionTouchMs = 60_000;

/**
 * What a response stream's request leaves behind once done: its response; the end of the stream when
 * the client cancelled it; or nothing when the server is stopping, so that a plain call's stream can be
 * resumed (and followed again) after the restart.
 */
export function finishResponseStream(ctx: McpContext, sessionId: string, streamKey: string, signal: AbortSignal, final: Record<string, unknown>): void {
  if (signal.reason === shuttingDown) return;
  ctx.streams.endResponse(sessionId, streamKey, signal.aborted ? undefined : final);
}

export const inFlightKey = (sessionId: string, id: string | number) => `${sessionId}\u0000${typeof id}:${id}`;

/** Resolves with the caller's live session named by Mcp-Session-Id: 400 without one, 404 for any other. */
export async function requireSession(request: McpHttpRequest, userId: string, facts: RequestFacts): Promise<McpSession> {
  const sessionId = request.header(sessionHeader);
  if (!sessionId) {
    throw new HttpError(400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required; call initialize first');
  }
  const session = await getMcpSessionById(sessionId);
  if (!session || session.userId !== userId || session.endedAt !== null) {
    throw new HttpError(404, ErrorCode.InvalidRequest, 'Session not found: it has ended or never existed; initialize a new one');
  }
  const now = Date.now();
  if (now - session.lastSeenAt >= sessionTouchMs) await unlessStorageTrouble(touchMcpSession(session.id, now));
  facts.session = session;
  return session;
}

export function toErrorObject(error: unknown, method: string): JsonRpcErrorObject {
  if (isRpcError(error)) return error.toJson();
  if ((error instanceof Error || error instanceof DOMException) && error.name === 'AbortError') {
    return { code: ErrorCode.InternalError, message: `Request ${method} was cancelled` };
  }
  const trouble = storageTroubleIn(error);
  if (trouble) {
    const unavailable = storageRefusal(trouble);
    return { code: unavailable.rpcCode, message: unavailable.message, data: unavailable.data };
  }
  // The method is the client's text: quoted and escaped, it cannot forge a log line.
  console.error(`MCP ${JSON.stringify(method)}: unexpected error`, error);
  return { code: ErrorCode.InternalError, message: `Internal error while handling ${method}` };
}

export const streamReply = (stream: SseStream): McpReply => ({ status: 200, headers: {}, stream });

/** An ended session's stream closes and its requests in flight stop. */
export function stopSessionWork(ctx: McpContext, sessionId: string): void {
  ctx.streams.close(sessionId);
  forgetAnsweredCopies(sessionId);
  for (const [key, controller] of inFlight) {
    if (key.startsWith(`${sessionId}\u0000`)) controller.abort(new Error('Session ended'));
  }
}
