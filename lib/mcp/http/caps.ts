import { inTransaction } from '@/db/run';
import { countLiveMcpSessionsByUserId, createMcpSession, endLeastRecentlyUsedMcpSessions, lockSessionsOfUser, type McpSession } from '@/db/queries/sessions';
import {
  deleteExpiredStreamPlaces,
  deleteStreamPlaceById,
  deleteStreamPlacesByInstanceId,
  insertStreamPlaceWithinLimit,
  listSessionIdsWithOpenStreams,
  renewStreamPlaces as renewStreamPlaceRows,
  type StreamPlaceKind,
} from '@/db/queries/stream-places';
import { getEnv } from '@/lib/env';
import { instanceId } from '@/lib/instance';
import type { TaskEngine } from '@/lib/tasks/engine';
import { isTerminal } from '@/lib/tasks/states';
import { findTool } from '@/lib/tools/catalogue';
import type { HttpError } from '../core/errors';
import { refusal } from './rate-limit';
import { tasksProtocolVersion, type JsonRpcRequest } from '../core/schema';
import type { SseStream } from './sse';

/**
 * How long a client refused by a cap is told to wait. Streams end when their clients close them, at
 * no time the server knows, so this is a pace for retrying rather than a promise.
 */
export const capRetryAfterMs = 10_000;

/** Which streams a cap counts: those of /mcp (GET and streamed responses) or the dashboard's live views. */
export type StreamKind = StreamPlaceKind;

/**
 * How long a stream's place counts on PostgreSQL without renewal: the streams of an instance that died
 * stop counting within this. The instance holding them renews them every `streamPlaceRenewalMs`.
 */
export const streamPlaceTtlMs = 30_000;
export const streamPlaceRenewalMs = 10_000;

/**
 * Open streams per user and kind in this process (SQLite), and the ids of the places this process holds
 * in the shared table (PostgreSQL). Route bundles and the production server each load their own copy of
 * this module, and every copy must count the same streams.
 */
const globalForCounts = globalThis as unknown as { __mcpTaskServerStreamsPerUser?: Map<string, number>; __mcpTaskServerStreamPlaceIds?: Set<string> };
const openStreamsPerUser = (globalForCounts.__mcpTaskServerStreamsPerUser ??= new Map<string, number>());
const heldPlaceIds = (globalForCounts.__mcpTaskServerStreamPlaceIds ??= new Set<string>());

/**
 * Whether the streams are counted in the database: instances sharing PostgreSQL count together. One
 * process on SQLite is the whole deployment and counts in memory, which is faster.
 */
const countedInDatabase = () => getEnv().DATABASE_URL !== undefined;

/** One of a user's places for a stream: given back once, by `release` or when the stream it holds ends. */
export interface StreamPlace {
  holdUntilEnd(stream: SseStream): void;
  release(): void;
}

/**
 * A place held until it is given back, once. A class, not closures: every open stream holds one, and
 * thousands may be open.
 */
class HeldPlace implements StreamPlace {
  private held = true;

  constructor(private readonly giveBack: () => void) {}

  release(): void {
    if (!this.held) return;
    this.held = false;
    this.giveBack();
  }

  holdUntilEnd(stream: SseStream): void {
    stream.onClose(this);
  }

  /** The stream it was held for has closed. */
  streamClosed(): void {
    this.release();
  }
}

function occupyInMemory(key: string): StreamPlace {
  openStreamsPerUser.set(key, (openStreamsPerUser.get(key) ?? 0) + 1);
  return new HeldPlace(() => {
    const left = (openStreamsPerUser.get(key) ?? 1) - 1;
    if (left > 0) openStreamsPerUser.set(key, left);
    else openStreamsPerUser.delete(key);
  });
}

async function occupyInDatabase(kind: StreamKind, userId: string, limit: number, sessionId: string | null): Promise<StreamPlace | null> {
  const now = Date.now();
  const id = await insertStreamPlaceWithinLimit({ userId, kind, sessionId, instanceId, expiresAt: now + streamPlaceTtlMs }, limit, now);
  if (id === null) return null;
  heldPlaceIds.add(id);
  // The stream has ended: nothing waits for the row to go.
  return new HeldPlace(() => {
    heldPlaceIds.delete(id);
    deleteStreamPlaceById(id).catch((error: unknown) =>
      console.error(`Giving back a stream's place failed; it stops counting within ${streamPlaceTtlMs / 1000} s`, error),
    );
  });
}

/**
 * A place for one more stream of this user, or null when `limit` of theirs are open already: in this
 * process on SQLite (counted before this returns), on every instance on PostgreSQL. `sessionId` names
 * the MCP session the stream belongs to, which is in use while the stream is open.
 */
export function takeStreamPlace(kind: StreamKind, userId: string, limit: number, sessionId: string | null = null): Promise<StreamPlace | null> {
  if (countedInDatabase()) return occupyInDatabase(kind, userId, limit, sessionId);
  const key = `${kind}:${userId}`;
  return Promise.resolve((openStreamsPerUser.get(key) ?? 0) >= limit ? null : occupyInMemory(key));
}

/**
 * A place for one more /mcp stream of this user, or a 429 naming the cap. With `atCap: 'allow'` the
 * stream is counted even past the cap: it replaces one that closes at once, or it opened without warning.
 */
export async function takeMcpStreamPlace(userId: string, sessionId: string | null, atCap: 'refuse' | 'allow' = 'refuse'): Promise<StreamPlace> {
  const limit = getEnv().MCP_MAX_STREAMS_PER_USER;
  const place = await takeStreamPlace('mcp', userId, atCap === 'allow' ? Infinity : limit, sessionId);
  if (!place) {
    throw refusal(
      `this account already has ${limit} streams open (GET streams and streamed responses), the most MCP_MAX_STREAMS_PER_USER allows; close one first`,
      capRetryAfterMs,
    );
  }
  return place;
}

/**
 * Counts a /mcp stream that is open already, past the cap if need be (one no one could foresee: a quick
 * tool's progress, a cancelled request, a batch's answer); its place is given back when it ends.
 */
export function countMcpStream(userId: string, sessionId: string | null, stream: SseStream): void {
  takeMcpStreamPlace(userId, sessionId, 'allow').then(
    (taken) => taken.holdUntilEnd(stream),
    (error: unknown) => console.error('Counting a stream against MCP_MAX_STREAMS_PER_USER failed; it goes uncounted', error),
  );
}

/**
 * The MCP sessions with a stream open, in use however long since their last request: those open here
 * (`local`), and on PostgreSQL those with a stream open on any instance.
 */
export async function sessionsWithStreamOpen(local: string[]): Promise<string[]> {
  if (!countedInDatabase()) return local;
  return [...new Set([...local, ...(await listSessionIdsWithOpenStreams(null, Date.now()))])];
}

/** Keeps the places this instance holds counting (PostgreSQL): run every `streamPlaceRenewalMs`. */
export async function renewStreamPlaces(): Promise<void> {
  if (!countedInDatabase()) return;
  await renewStreamPlaceRows(instanceId, [...heldPlaceIds], Date.now() + streamPlaceTtlMs);
}

/** Gives back every place of this instance at once (PostgreSQL): it is stopping, and its streams with it. */
export async function giveBackStreamPlaces(): Promise<void> {
  if (!countedInDatabase()) return;
  heldPlaceIds.clear();
  await deleteStreamPlacesByInstanceId(instanceId);
}

/** Deletes the places of instances that died without giving them back (PostgreSQL); they count no longer. */
export async function deleteLapsedStreamPlaces(): Promise<void> {
  if (countedInDatabase()) await deleteExpiredStreamPlaces(Date.now());
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
 * recently used sessions with no stream open (here, or on any instance sharing PostgreSQL) end, so that
 * clients that never DELETE their sessions keep working; when every session at the cap has a stream
 * open, the promise rejects with the refusal and nothing changes. Counting, ending and creating are one transaction, taken one at a time per user:
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
    yield* lockSessionsOfUser(q, userId);
    const excess = (yield* countLiveMcpSessionsByUserId.program(q, userId)) - limit + 1;
    let ended: string[] = [];
    if (excess > 0) {
      // In use: a stream open here, or on PostgreSQL on any instance.
      const inUse = new Set(openSessionIds());
      for (const sessionId of yield* listSessionIdsWithOpenStreams.program(q, userId, Date.now())) inUse.add(sessionId);
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
