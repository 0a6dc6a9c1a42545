import { inTransaction, lock } from '@/db/run';
import { countLiveMcpSessionsByUserId, createMcpSession, endLeastRecentlyUsedMcpSessions, type McpSession } from '@/db/queries/sessions';
import { getEnv } from '@/lib/env';
import type { TaskEngine } from '@/lib/tasks/engine';
import { isTerminal } from '@/lib/tasks/states';
import { findTool } from '@/lib/tools';
import type { HttpError } from './errors';
import { refusal } from './rate-limit';
import { tasksProtocolVersion, type JsonRpcRequest } from './schema';
import type { SseStream } from './sse';

/**
 * How long a client refused by a cap is told to wait. Streams end when their clients close them, at
 * no time the server knows, so this is a pace for retrying rather than a promise.
 */
export const capRetryAfterMs = 10_000;

/** Which streams a cap counts: those of /mcp (GET and streamed responses) or the dashboard's live views. */
export type StreamKind = 'mcp' | 'dashboard';

/**
 * Open streams per user and kind in this process. Route bundles and the production server each load
 * their own copy of this module, and every copy must count the same streams.
 */
const globalForCounts = globalThis as unknown as { __mcpTaskServerStreamsPerUser?: Map<string, number> };
const openStreamsPerUser = (globalForCounts.__mcpTaskServerStreamsPerUser ??= new Map<string, number>());

/** One of a user's places for a stream: given back once, by `release` or when the stream it holds ends. */
export interface StreamPlace {
  holdUntilEnd(stream: SseStream): void;
  release(): void;
}

function occupy(key: string): StreamPlace {
  openStreamsPerUser.set(key, (openStreamsPerUser.get(key) ?? 0) + 1);
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    const left = (openStreamsPerUser.get(key) ?? 1) - 1;
    if (left > 0) openStreamsPerUser.set(key, left);
    else openStreamsPerUser.delete(key);
  };
  return {
    release,
    holdUntilEnd: (stream) => {
      if (stream.closed) release();
      else stream.signal.addEventListener('abort', release, { once: true });
    },
  };
}

/** A place for one more stream of this user, or null when `limit` of theirs are open already. */
export function takeStreamPlace(kind: StreamKind, userId: string, limit: number): StreamPlace | null {
  const key = `${kind}:${userId}`;
  if ((openStreamsPerUser.get(key) ?? 0) >= limit) return null;
  return occupy(key);
}

/**
 * A place for one more /mcp stream of this user, or a 429 naming the cap. With `atCap: 'allow'` the
 * stream is counted even past the cap: it replaces one that closes at once, or it opened without warning.
 */
export function takeMcpStreamPlace(userId: string, atCap: 'refuse' | 'allow' = 'refuse'): StreamPlace {
  const limit = getEnv().MCP_MAX_STREAMS_PER_USER;
  const place = takeStreamPlace('mcp', userId, atCap === 'allow' ? Infinity : limit);
  if (!place) {
    throw refusal(
      `this account already has ${limit} streams open (GET streams and streamed responses), the most MCP_MAX_STREAMS_PER_USER allows; close one first`,
      capRetryAfterMs,
    );
  }
  return place;
}

/**
 * Resolves with whether a request would be answered with a stream: a plain call of a tool that runs as
 * a task, or tasks/result of a task not yet ended. Those are refused up front at the stream cap; every
 * request answered with plain JSON goes through. Only tasks/result reads the database.
 */
export async function answersWithStream(message: JsonRpcRequest, session: McpSession, engine: TaskEngine, userId: string): Promise<boolean> {
  const params = typeof message.params === 'object' && message.params !== null ? (message.params as Record<string, unknown>) : {};
  const hasTasks = session.protocolVersion === tasksProtocolVersion;
  if (message.method === 'tools/call') {
    const tool = typeof params.name === 'string' ? findTool(params.name) : undefined;
    return tool?.taskSupport === 'optional' && (!hasTasks || params.task === undefined);
  }
  if (message.method !== 'tasks/result' || !hasTasks || typeof params.taskId !== 'string') return false;
  try {
    return !isTerminal((await engine.getTaskStatus(params.taskId, userId)).status);
  } catch {
    // An unknown task is answered with a JSON error.
    return false;
  }
}

/**
 * Creates a session of this user, making room for it first. At MCP_MAX_SESSIONS_PER_USER, the least
 * recently used sessions with no stream open here end, so that clients that never DELETE their sessions
 * keep working; when every session at the cap has a stream open, the promise rejects with the refusal
 * and nothing changes. Counting, ending and creating are one transaction, taken one at a time per user:
 * two initializes at once cannot both take the last place. Resolves with the session and the sessions
 * ended for it.
 */
export function createSessionWithinCap(
  session: Parameters<typeof createMcpSession>[0],
  openSessionIds: () => string[],
): Promise<{ session: McpSession; ended: string[] }> {
  const limit = getEnv().MCP_MAX_SESSIONS_PER_USER;
  const userId = session.userId;
  return inTransaction(function* (q) {
    yield* lock(q, 'mcp-sessions-of-user:' + userId);
    const excess = (yield* countLiveMcpSessionsByUserId.program(q, userId)) - limit + 1;
    let ended: string[] = [];
    if (excess > 0) {
      const inUse = new Set(openSessionIds());
      ended = yield* endLeastRecentlyUsedMcpSessions.program(q, userId, excess, (sessionId) => inUse.has(sessionId));
      if (ended.length < excess) throw sessionCapRefusal(limit);
    }
    return { session: yield* createMcpSession.program(q, session), ended };
  });
}

function sessionCapRefusal(limit: number): HttpError {
  return refusal(
    `this account already has ${limit} sessions, the most MCP_MAX_SESSIONS_PER_USER allows, and each has a stream open; ` +
      'end one (DELETE /mcp) or close its stream first',
    capRetryAfterMs,
  );
}
