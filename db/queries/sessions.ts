import { and, asc, count, desc, eq, exists, gt, inArray, isNotNull, isNull, lt, max, notInArray, or, sql } from 'drizzle-orm';
import { alias, type SQLiteColumn } from 'drizzle-orm/sqlite-core';
import { rowCache } from '../cache';
import { getDb, preparedQuery } from '../client';
import { mcpSessions, sessionMessages } from '../schema';

export type McpSession = typeof mcpSessions.$inferSelect;

export function createMcpSession(input: Omit<McpSession, 'createdAt' | 'lastSeenAt' | 'endedAt' | 'logLevel'>): McpSession {
  const now = Date.now();
  return getDb()
    .insert(mcpSessions)
    .values({ ...input, createdAt: now, lastSeenAt: now })
    .returning()
    .all()[0];
}

const selectSessionById = preparedQuery((db) => db.select().from(mcpSessions).where(eq(mcpSessions.id, sql.placeholder('id'))).prepare());
/** Every request reads its session; see RowCache for how stale an entry may be. */
const sessionsById = rowCache<string, McpSession>('mcp-sessions-by-id', 10_000, 5_000);

export function getMcpSessionById(id: string): McpSession | undefined {
  return sessionsById.get(id, () => selectSessionById().get({ id }));
}

/** Notes that a session is in use; written at most once a minute per session. */
export function touchMcpSession(id: string, now: number): void {
  getDb().update(mcpSessions).set({ lastSeenAt: now }).where(eq(mcpSessions.id, id)).run();
  sessionsById.update(id, (session) => ({ ...session, lastSeenAt: now }));
}

/** Stores the log level the session's client asked for (an ended session keeps what it had). */
export function setMcpSessionLogLevel(id: string, logLevel: string): void {
  getDb()
    .update(mcpSessions)
    .set({ logLevel })
    .where(and(eq(mcpSessions.id, id), isNull(mcpSessions.endedAt)))
    .run();
  sessionsById.update(id, (session) => ({ ...session, logLevel }));
}

/** Ends the sessions nobody has used since `cutoff`, except those listed (they have a stream open). */
export function endIdleMcpSessions(cutoff: number, keep: string[]): string[] {
  return getDb().transaction((tx) => {
    const ended = tx
      .update(mcpSessions)
      .set({ endedAt: Date.now() })
      .where(and(isNull(mcpSessions.endedAt), lt(mcpSessions.lastSeenAt, cutoff), keep.length > 0 ? notInArray(mcpSessions.id, keep) : undefined))
      .returning({ id: mcpSessions.id })
      .all()
      .map((row) => row.id);
    if (ended.length > 0) tx.delete(sessionMessages).where(inArray(sessionMessages.sessionId, ended)).run();
    for (const sessionId of ended) sessionsById.delete(sessionId);
    return ended;
  });
}

const countLiveSessionsByUserId = preparedQuery((db) =>
  db
    .select({ live: count() })
    .from(mcpSessions)
    .where(and(eq(mcpSessions.userId, sql.placeholder('userId')), isNull(mcpSessions.endedAt)))
    .prepare(),
);

/** How many sessions of this user have not ended: every initialize reads it. */
export function countLiveMcpSessionsByUserId(userId: string): number {
  return countLiveSessionsByUserId().get({ userId })?.live ?? 0;
}

/**
 * Ends `wanted` of the user's live sessions, the least recently used first (by last use, recorded to
 * the minute, then by age), skipping those `inUse` names; ends none when fewer than `wanted` qualify.
 * Returns the ids ended.
 */
export function endLeastRecentlyUsedMcpSessions(userId: string, wanted: number, inUse: (sessionId: string) => boolean): string[] {
  return getDb().transaction((tx) => {
    const candidates = tx
      .select({ id: mcpSessions.id })
      .from(mcpSessions)
      .where(and(eq(mcpSessions.userId, userId), isNull(mcpSessions.endedAt)))
      .orderBy(asc(mcpSessions.lastSeenAt), asc(mcpSessions.createdAt), asc(sql`rowid`))
      .all()
      .map((row) => row.id)
      .filter((id) => !inUse(id))
      .slice(0, wanted);
    if (candidates.length < wanted) return [];
    tx.update(mcpSessions).set({ endedAt: Date.now() }).where(inArray(mcpSessions.id, candidates)).run();
    tx.delete(sessionMessages).where(inArray(sessionMessages.sessionId, candidates)).run();
    for (const sessionId of candidates) sessionsById.delete(sessionId);
    return candidates;
  });
}

/** Deletes the rows of ended sessions (their messages go with them): an ended session is never used again. */
export function deleteEndedMcpSessions(): number {
  return getDb().delete(mcpSessions).where(isNotNull(mcpSessions.endedAt)).run().changes;
}

/** Ends a live session of this user and drops its undelivered messages; false when there is none. */
export function endMcpSession(id: string, userId: string): boolean {
  return getDb().transaction((tx) => {
    const ended = tx
      .update(mcpSessions)
      .set({ endedAt: Date.now() })
      .where(and(eq(mcpSessions.id, id), eq(mcpSessions.userId, userId), isNull(mcpSessions.endedAt)))
      .run();
    tx.delete(sessionMessages).where(eq(sessionMessages.sessionId, id)).run();
    sessionsById.delete(id);
    return ended.changes > 0;
  });
}

/**
 * Queues a message for one of a live session's streams (null: its GET stream); the returned id is its
 * SSE event id, unique across all of the session's streams. Returns undefined when the session has
 * ended or does not exist.
 */
const selectLiveSessionId = preparedQuery((db) =>
  db
    .select({ id: mcpSessions.id })
    .from(mcpSessions)
    .where(and(eq(mcpSessions.id, sql.placeholder('id')), isNull(mcpSessions.endedAt)))
    .prepare(),
);

const insertSessionMessage = preparedQuery((db) =>
  db
    .insert(sessionMessages)
    .values({
      sessionId: sql.placeholder('sessionId'),
      stream: sql.placeholder('stream'),
      message: sql.placeholder('message'),
      createdAt: sql.placeholder('createdAt'),
    })
    .returning({ id: sessionMessages.id })
    .prepare(),
);

export function appendSessionMessage(sessionId: string, message: Record<string, unknown>, stream: string | null = null): number | undefined {
  return getDb().transaction(() => {
    if (!selectLiveSessionId().get({ id: sessionId })) return undefined;
    return insertSessionMessage().all({ sessionId, stream, message, createdAt: Date.now() })[0].id;
  });
}

/** The id of the newest message on the session's GET stream, or 0: where a fresh GET stream starts. */
export function getLastSessionMessageId(sessionId: string): number {
  const row = getDb()
    .select({ id: max(sessionMessages.id) })
    .from(sessionMessages)
    .where(and(eq(sessionMessages.sessionId, sessionId), isNull(sessionMessages.stream)))
    .get();
  return row?.id ?? 0;
}

/** Whether the session still has any message of this response stream: one it never had, or forgot, it cannot resume. */
export function hasSessionStream(sessionId: string, stream: string): boolean {
  const row = getDb()
    .select({ id: sessionMessages.id })
    .from(sessionMessages)
    .where(and(eq(sessionMessages.sessionId, sessionId), eq(sessionMessages.stream, stream)))
    .limit(1)
    .get();
  return row !== undefined;
}

/** The first message of a response stream: its priming row, which names the request the stream answers. */
export function getFirstSessionStreamMessage(sessionId: string, stream: string): Record<string, unknown> | undefined {
  return getDb()
    .select({ message: sessionMessages.message })
    .from(sessionMessages)
    .where(and(eq(sessionMessages.sessionId, sessionId), eq(sessionMessages.stream, stream)))
    .orderBy(asc(sessionMessages.id))
    .limit(1)
    .get()?.message;
}

/** The last progress value sent on one of the session's streams for a progress token, if any. */
export function getLastSessionStreamProgress(sessionId: string, stream: string | null, progressToken: string | number): number | undefined {
  const progress = sql<number>`json_extract(${sessionMessages.message}, '$.params.progress')`;
  const row = getDb()
    .select({ progress })
    .from(sessionMessages)
    .where(
      and(
        eq(sessionMessages.sessionId, sessionId),
        stream === null ? isNull(sessionMessages.stream) : eq(sessionMessages.stream, stream),
        sql`json_extract(${sessionMessages.message}, '$.method') = 'notifications/progress'`,
        sql`json_extract(${sessionMessages.message}, '$.params.progressToken') = ${progressToken}`,
      ),
    )
    .orderBy(desc(sessionMessages.id))
    .limit(1)
    .get();
  return typeof row?.progress === 'number' ? row.progress : undefined;
}

/** The stream a request we sent the session went on (null: its GET stream); undefined when it is not in the outbox. */
export function getSessionRequestStream(sessionId: string, requestId: string): { stream: string | null } | undefined {
  return getDb()
    .select({ stream: sessionMessages.stream })
    .from(sessionMessages)
    .where(
      and(
        eq(sessionMessages.sessionId, sessionId),
        sql`json_extract(${sessionMessages.message}, '$.method') IS NOT NULL`,
        sql`json_extract(${sessionMessages.message}, '$.id') = ${requestId}`,
      ),
    )
    .orderBy(desc(sessionMessages.id))
    .limit(1)
    .get();
}

export function listSessionMessagesAfter(sessionId: string, afterId: number, limit: number, stream: string | null = null) {
  return getDb()
    .select({ id: sessionMessages.id, message: sessionMessages.message })
    .from(sessionMessages)
    .where(
      and(
        eq(sessionMessages.sessionId, sessionId),
        stream === null ? isNull(sessionMessages.stream) : eq(sessionMessages.stream, stream),
        gt(sessionMessages.id, afterId),
      ),
    )
    .orderBy(asc(sessionMessages.id))
    .limit(limit)
    .all();
}

/** The stream the latest request about a client's own task went on (null: the GET stream); undefined when none did. */
export function getSessionClientTaskRequestStream(sessionId: string, clientTaskId: string): { stream: string | null } | undefined {
  return getDb()
    .select({ stream: sessionMessages.stream })
    .from(sessionMessages)
    .where(
      and(
        eq(sessionMessages.sessionId, sessionId),
        sql`json_extract(${sessionMessages.message}, '$.method') IN ('tasks/get', 'tasks/result')`,
        sql`json_extract(${sessionMessages.message}, '$.params.taskId') = ${clientTaskId}`,
      ),
    )
    .orderBy(desc(sessionMessages.id))
    .limit(1)
    .get();
}

/** The last message of a response stream: its response, or the end of a stream that has none. */
const endsStreamIn = (table: { message: SQLiteColumn }) =>
  sql`(json_extract(${table.message}, '$.method') IS NULL AND (json_extract(${table.message}, '$.jsonrpc') IS NOT NULL OR json_extract(${table.message}, '$.end') IS NOT NULL))`;
const endsStream = endsStreamIn(sessionMessages);

/** Whether a response stream has ended: sent its response (its last message), or ended without one. */
export function hasSessionStreamEnded(sessionId: string, stream: string): boolean {
  const row = getDb()
    .select({ id: sessionMessages.id })
    .from(sessionMessages)
    .where(and(eq(sessionMessages.sessionId, sessionId), eq(sessionMessages.stream, stream), endsStream))
    .get();
  return row !== undefined;
}

/** The ids of the requests sent on a session's GET stream whose id starts with `prefix`. */
export function listSessionRequestIdsWithPrefix(sessionId: string, prefix: string): string[] {
  const requestId = sql<string>`json_extract(${sessionMessages.message}, '$.id')`;
  return getDb()
    .select({ requestId })
    .from(sessionMessages)
    .where(
      and(
        eq(sessionMessages.sessionId, sessionId),
        isNull(sessionMessages.stream),
        sql`json_extract(${sessionMessages.message}, '$.method') IS NOT NULL`,
        sql`substr(${requestId}, 1, ${prefix.length}) = ${prefix}`,
      ),
    )
    .all()
    .map((row) => row.requestId);
}

/**
 * Forgets messages older than `cutoff`, except those of response streams that have not ended: a call
 * may wait for hours (a person answering), and its client must be able to resume it all that time.
 * Such a stream's rows go with its session.
 */
export function deleteSessionMessagesOlderThan(cutoff: number): number {
  // Asked per old row, through the stream index: reading every stream's messages instead cost the
  // sweep a full pass of JSON parsing each minute even when nothing had aged out.
  const ending = alias(sessionMessages, 'ending');
  const streamHasEnded = getDb()
    .select({ id: ending.id })
    .from(ending)
    .where(and(eq(ending.stream, sessionMessages.stream), endsStreamIn(ending)));
  return getDb()
    .delete(sessionMessages)
    .where(and(lt(sessionMessages.createdAt, cutoff), or(isNull(sessionMessages.stream), exists(streamHasEnded))))
    .run().changes;
}
