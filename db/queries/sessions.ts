import { and, asc, count, desc, eq, exists, gt, inArray, isNotNull, isNull, lt, max, notInArray, or, sql, type Column, type SQL } from 'drizzle-orm';
import { alias as pgAlias } from 'drizzle-orm/pg-core';
import { alias as sqliteAlias } from 'drizzle-orm/sqlite-core';
import { rowCache } from '../cache';
import { changes, defineQuery, first, lock, postgresStatement, preparedQuery, rows, type Program, type QueryContext } from '../run';
import type { mcpSessions } from '../schema';

export type McpSession = typeof mcpSessions.$inferSelect;

/**
 * A value inside a JSON text column, at a fixed path of object keys (constants of this file, never
 * input). As text on PostgreSQL (`#>>`: null when absent or JSON null, as json_extract is on SQLite),
 * for IS NULL tests and comparisons with strings.
 */
function jsonText(q: QueryContext, column: Column, path: readonly string[]): SQL {
  return q.dialect === 'pg'
    ? sql`(cast(${column} as json) #>> ${sql.raw(`'{${path.join(',')}}'`)})`
    : sql`json_extract(${column}, ${sql.raw(`'$.${path.join('.')}'`)})`;
}

/** The same value as a JSON number or string where it is one (PostgreSQL's `json` comes back parsed). */
function jsonValue(q: QueryContext, column: Column, path: readonly string[]): SQL {
  return q.dialect === 'pg'
    ? sql`(cast(${column} as json) #> ${sql.raw(`'{${path.join(',')}}'`)})`
    : sql`json_extract(${column}, ${sql.raw(`'$.${path.join('.')}'`)})`;
}

/**
 * Whether the JSON value at the path equals `value`, type included (a number never equals the string
 * of its digits), as SQLite compares json_extract's result with a bound string or number.
 */
function jsonEquals(q: QueryContext, column: Column, path: readonly string[], value: string | number): SQL {
  return q.dialect === 'pg'
    ? sql`cast(${jsonValue(q, column, path)} as jsonb) = cast(${JSON.stringify(value)} as jsonb)`
    : sql`${jsonValue(q, column, path)} = ${value}`;
}

export const createMcpSession = defineQuery(function* (
  q,
  input: Omit<McpSession, 'createdAt' | 'lastSeenAt' | 'endedAt' | 'logLevel'>,
): Program<McpSession> {
  const { mcpSessions } = q.t;
  const now = Date.now();
  const [session] = yield* rows(
    q.db
      .insert(mcpSessions)
      .values({ ...input, createdAt: now, lastSeenAt: now })
      .returning(),
  );
  return session;
});

const selectSessionById = preparedQuery((q) => q.db.select().from(q.t.mcpSessions).where(eq(q.t.mcpSessions.id, sql.placeholder('id'))));
/** Every request reads its session; see RowCache for how stale an entry may be. */
const sessionsById = rowCache<string, McpSession>('mcp-sessions-by-id', 10_000, 5_000, { mcp_sessions: 'key' });

export const getMcpSessionById = defineQuery(
  function* (q, id: string): Program<McpSession | undefined> {
    const hit = sessionsById.peek(id);
    if (hit !== undefined) return hit;
    const stamp = sessionsById.stamp();
    const session = yield* first(selectSessionById(q), { id });
    sessionsById.set(id, session, stamp);
    return session;
  },
  { fromCache: (id) => sessionsById.peek(id) },
);

/** Notes that a session is in use; written at most once a minute per session. */
export const touchMcpSession = defineQuery(function* (q, id: string, now: number): Program<void> {
  const { mcpSessions } = q.t;
  yield* changes(q.db.update(mcpSessions).set({ lastSeenAt: now }).where(eq(mcpSessions.id, id)));
  sessionsById.update(id, (session) => ({ ...session, lastSeenAt: now }));
});

/** Stores the log level the session's client asked for (an ended session keeps what it had). */
export const setMcpSessionLogLevel = defineQuery(function* (q, id: string, logLevel: string): Program<void> {
  const { mcpSessions } = q.t;
  yield* changes(
    q.db
      .update(mcpSessions)
      .set({ logLevel })
      .where(and(eq(mcpSessions.id, id), isNull(mcpSessions.endedAt))),
  );
  sessionsById.update(id, (session) => ({ ...session, logLevel }));
});

/** Ends the sessions nobody has used since `cutoff`, except those listed (they have a stream open). */
export const endIdleMcpSessions = defineQuery(
  function* (q, cutoff: number, keep: string[]): Program<string[]> {
    const { mcpSessions, sessionMessages } = q.t;
    const ended = (yield* rows(
      q.db
        .update(mcpSessions)
        .set({ endedAt: Date.now() })
        .where(and(isNull(mcpSessions.endedAt), lt(mcpSessions.lastSeenAt, cutoff), keep.length > 0 ? notInArray(mcpSessions.id, keep) : undefined))
        .returning({ id: mcpSessions.id }),
    )).map((row) => row.id);
    if (ended.length > 0) yield* changes(q.db.delete(sessionMessages).where(inArray(sessionMessages.sessionId, ended)));
    for (const sessionId of ended) sessionsById.delete(sessionId);
    return ended;
  },
  { transaction: 'immediate' },
);

const countLiveSessionsByUserId = preparedQuery((q) =>
  q.db
    .select({ live: count() })
    .from(q.t.mcpSessions)
    .where(and(eq(q.t.mcpSessions.userId, sql.placeholder('userId')), isNull(q.t.mcpSessions.endedAt))),
);

/** How many sessions of this user have not ended: every initialize reads it. */
export const countLiveMcpSessionsByUserId = defineQuery(function* (q, userId: string): Program<number> {
  return (yield* first(countLiveSessionsByUserId(q), { userId }))?.live ?? 0;
});

/** Serialises, for one user, the transactions that count their live sessions and then end or create one. */
export function lockSessionsOfUser(q: QueryContext, userId: string): Program<void> {
  return lock(q, `mcp-sessions-of-user:${userId}`);
}

/**
 * Ends `wanted` of the user's live sessions, the least recently used first (by last use, recorded to
 * the minute, then by age), skipping those `inUse` names; ends none when fewer than `wanted` qualify.
 * Returns the ids ended.
 */
export const endLeastRecentlyUsedMcpSessions = defineQuery(
  function* (q, userId: string, wanted: number, inUse: (sessionId: string) => boolean): Program<string[]> {
    const { mcpSessions, sessionMessages } = q.t;
    // Two of the user's initializes at once must not both pick (and count) the same sessions.
    yield* lockSessionsOfUser(q, userId);
    // Last tie-break: the order of insertion on SQLite (rowid); PostgreSQL has none, the id is stable.
    const tieBreak = q.dialect === 'pg' ? asc(mcpSessions.id) : asc(sql`rowid`);
    const candidates = (yield* rows(
      q.db
        .select({ id: mcpSessions.id })
        .from(mcpSessions)
        .where(and(eq(mcpSessions.userId, userId), isNull(mcpSessions.endedAt)))
        .orderBy(asc(mcpSessions.lastSeenAt), asc(mcpSessions.createdAt), tieBreak),
    ))
      .map((row) => row.id)
      .filter((id) => !inUse(id))
      .slice(0, wanted);
    if (candidates.length < wanted) return [];
    yield* changes(q.db.update(mcpSessions).set({ endedAt: Date.now() }).where(inArray(mcpSessions.id, candidates)));
    yield* changes(q.db.delete(sessionMessages).where(inArray(sessionMessages.sessionId, candidates)));
    for (const sessionId of candidates) sessionsById.delete(sessionId);
    return candidates;
  },
  { transaction: 'immediate' },
);

/** Deletes the rows of ended sessions (their messages go with them): an ended session is never used again. */
export const deleteEndedMcpSessions = defineQuery(function* (q): Program<number> {
  const { mcpSessions } = q.t;
  return yield* changes(q.db.delete(mcpSessions).where(isNotNull(mcpSessions.endedAt)));
});

/** Ends a live session of this user and drops its undelivered messages; false when there is none. */
export const endMcpSession = defineQuery(
  function* (q, id: string, userId: string): Program<boolean> {
    const { mcpSessions, sessionMessages } = q.t;
    const ended = yield* changes(
      q.db
        .update(mcpSessions)
        .set({ endedAt: Date.now() })
        .where(and(eq(mcpSessions.id, id), eq(mcpSessions.userId, userId), isNull(mcpSessions.endedAt))),
    );
    // Another user's session id (or one that ended) changes nothing: its messages are not this caller's.
    if (ended === 0) return false;
    yield* changes(q.db.delete(sessionMessages).where(eq(sessionMessages.sessionId, id)));
    sessionsById.delete(id);
    return true;
  },
  { transaction: 'immediate' },
);

/** SQLite: whether the session has not ended (its write lock keeps an ending out until the message is in). */
const selectLiveSessionId = preparedQuery((q) =>
  q.db
    .select({ id: q.t.mcpSessions.id })
    .from(q.t.mcpSessions)
    .where(and(eq(q.t.mcpSessions.id, sql.placeholder('id')), isNull(q.t.mcpSessions.endedAt))),
);

const insertSessionMessage = preparedQuery((q) =>
  q.db
    .insert(q.t.sessionMessages)
    .values({
      sessionId: sql.placeholder('sessionId'),
      stream: sql.placeholder('stream'),
      message: sql.placeholder('message'),
      createdAt: sql.placeholder('createdAt'),
    })
    .returning({ id: q.t.sessionMessages.id }),
);

/**
 * Queues a message for one of a live session's streams (null: its GET stream); the returned id is its
 * SSE event id, unique across all of the session's streams. Returns undefined when the session has
 * ended or does not exist.
 */
export const appendSessionMessage = defineQuery(
  function* (q, sessionId: string, message: Record<string, unknown>, stream: string | null = null): Program<number | undefined> {
    if (q.dialect === 'pg') {
      const [appended] = yield* appendToLiveSessionOnPostgres(q, [sessionId, stream, JSON.stringify(message), Date.now()]);
      return appended ? Number(appended.id) : undefined;
    }
    if (!(yield* first(selectLiveSessionId(q), { id: sessionId }))) return undefined;
    const [row] = yield* rows(insertSessionMessage(q), { sessionId, stream, message, createdAt: Date.now() });
    return row.id;
  },
  { transaction: 'immediate', oneStatementOnPostgres: true },
);

/** The same on PostgreSQL in one statement: the session's row held (FOR SHARE) while the message goes in. */
const appendToLiveSessionOnPostgres = postgresStatement<{ id: string }>(`
  WITH live AS (SELECT id FROM mcp_sessions WHERE id = $1 AND ended_at IS NULL FOR SHARE)
  INSERT INTO session_messages (session_id, stream, message, created_at)
  SELECT live.id, $2, $3, cast($4 AS bigint) FROM live
  RETURNING id`);

/** The id of the newest message on the session's GET stream, or 0: where a fresh GET stream starts. */
export const getLastSessionMessageId = defineQuery(function* (q, sessionId: string): Program<number> {
  const { sessionMessages } = q.t;
  const row = yield* first(
    q.db
      .select({ id: max(sessionMessages.id) })
      .from(sessionMessages)
      .where(and(eq(sessionMessages.sessionId, sessionId), isNull(sessionMessages.stream))),
  );
  return row?.id ?? 0;
});

/** Whether the session still has any message of this response stream: one it never had, or forgot, it cannot resume. */
export const hasSessionStream = defineQuery(function* (q, sessionId: string, stream: string): Program<boolean> {
  const { sessionMessages } = q.t;
  const row = yield* first(
    q.db
      .select({ id: sessionMessages.id })
      .from(sessionMessages)
      .where(and(eq(sessionMessages.sessionId, sessionId), eq(sessionMessages.stream, stream)))
      .limit(1),
  );
  return row !== undefined;
});

/** The first message of a response stream: its priming row, which names the request the stream answers. */
export const getFirstSessionStreamMessage = defineQuery(function* (
  q,
  sessionId: string,
  stream: string,
): Program<Record<string, unknown> | undefined> {
  const { sessionMessages } = q.t;
  const row = yield* first(
    q.db
      .select({ message: sessionMessages.message })
      .from(sessionMessages)
      .where(and(eq(sessionMessages.sessionId, sessionId), eq(sessionMessages.stream, stream)))
      .orderBy(asc(sessionMessages.id))
      .limit(1),
  );
  return row?.message;
});

/** The last progress value sent on one of the session's streams for a progress token, if any. */
export const getLastSessionStreamProgress = defineQuery(function* (
  q,
  sessionId: string,
  stream: string | null,
  progressToken: string | number,
): Program<number | undefined> {
  const { sessionMessages } = q.t;
  const progress = sql<unknown>`${jsonValue(q, sessionMessages.message, ['params', 'progress'])}`;
  const row = yield* first(
    q.db
      .select({ progress })
      .from(sessionMessages)
      .where(
        and(
          eq(sessionMessages.sessionId, sessionId),
          stream === null ? isNull(sessionMessages.stream) : eq(sessionMessages.stream, stream),
          sql`${jsonText(q, sessionMessages.message, ['method'])} = 'notifications/progress'`,
          jsonEquals(q, sessionMessages.message, ['params', 'progressToken'], progressToken),
        ),
      )
      .orderBy(desc(sessionMessages.id))
      .limit(1),
  );
  return typeof row?.progress === 'number' ? row.progress : undefined;
});

/** The stream a request we sent the session went on (null: its GET stream); undefined when it is not in the outbox. */
export const getSessionRequestStream = defineQuery(function* (
  q,
  sessionId: string,
  requestId: string,
): Program<{ stream: string | null } | undefined> {
  const message = q.t.sessionMessages.message;
  return yield* latestStreamWhere(q, sessionId, and(sql`${jsonText(q, message, ['method'])} IS NOT NULL`, jsonEquals(q, message, ['id'], requestId)));
});

/** The stream of the session's newest message that matches `condition` (null: its GET stream). */
function latestStreamWhere(q: QueryContext, sessionId: string, condition: SQL | undefined): Program<{ stream: string | null } | undefined> {
  const { sessionMessages } = q.t;
  return first(
    q.db
      .select({ stream: sessionMessages.stream })
      .from(sessionMessages)
      .where(and(eq(sessionMessages.sessionId, sessionId), condition))
      .orderBy(desc(sessionMessages.id))
      .limit(1),
  );
}

export const listSessionMessagesAfter = defineQuery(function* (
  q,
  sessionId: string,
  afterId: number,
  limit: number,
  stream: string | null = null,
): Program<{ id: number; message: Record<string, unknown> }[]> {
  const { sessionMessages } = q.t;
  return yield* rows(
    q.db
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
      .limit(limit),
  );
});

/** The stream the latest request about a client's own task went on (null: the GET stream); undefined when none did. */
export const getSessionClientTaskRequestStream = defineQuery(function* (
  q,
  sessionId: string,
  clientTaskId: string,
): Program<{ stream: string | null } | undefined> {
  const message = q.t.sessionMessages.message;
  return yield* latestStreamWhere(
    q,
    sessionId,
    and(sql`${jsonText(q, message, ['method'])} IN ('tasks/get', 'tasks/result')`, jsonEquals(q, message, ['params', 'taskId'], clientTaskId)),
  );
});

/** The last message of a response stream: its response, or the end of a stream that has none. */
const endsStreamIn = (q: QueryContext, table: { message: Column }) =>
  sql`(${jsonText(q, table.message, ['method'])} IS NULL AND (${jsonText(q, table.message, ['jsonrpc'])} IS NOT NULL OR ${jsonText(q, table.message, ['end'])} IS NOT NULL))`;

/** Whether a response stream has ended: sent its response (its last message), or ended without one. */
export const hasSessionStreamEnded = defineQuery(function* (q, sessionId: string, stream: string): Program<boolean> {
  const { sessionMessages } = q.t;
  const row = yield* first(
    q.db
      .select({ id: sessionMessages.id })
      .from(sessionMessages)
      .where(and(eq(sessionMessages.sessionId, sessionId), eq(sessionMessages.stream, stream), endsStreamIn(q, sessionMessages))),
  );
  return row !== undefined;
});

/** The ids of the requests sent on a session's GET stream whose id starts with `prefix`. */
export const listSessionRequestIdsWithPrefix = defineQuery(function* (q, sessionId: string, prefix: string): Program<string[]> {
  const { sessionMessages } = q.t;
  const requestId = sql<string>`${jsonText(q, sessionMessages.message, ['id'])}`;
  return (yield* rows(
    q.db
      .select({ requestId })
      .from(sessionMessages)
      .where(
        and(
          eq(sessionMessages.sessionId, sessionId),
          isNull(sessionMessages.stream),
          sql`${jsonText(q, sessionMessages.message, ['method'])} IS NOT NULL`,
          sql`substr(${requestId}, 1, cast(${prefix.length} as integer)) = cast(${prefix} as text)`,
        ),
      ),
  )).map((row) => row.requestId);
});

/**
 * Forgets messages older than `cutoff`, except those of response streams that have not ended: a call
 * may wait for hours (a person answering), and its client must be able to resume it all that time.
 * Such a stream's rows go with its session.
 */
export const deleteSessionMessagesOlderThan = defineQuery(function* (q, cutoff: number): Program<number> {
  const { sessionMessages } = q.t;
  // Asked per old row, through the stream index: reading every stream's messages instead cost the
  // sweep a full pass of JSON parsing each minute even when nothing had aged out.
  const alias = q.dialect === 'pg' ? (pgAlias as unknown as typeof sqliteAlias) : sqliteAlias;
  const ending = alias(sessionMessages, 'ending');
  const streamHasEnded = q.db
    .select({ id: ending.id })
    .from(ending)
    .where(and(eq(ending.stream, sessionMessages.stream), endsStreamIn(q, ending)));
  return yield* changes(
    q.db.delete(sessionMessages).where(and(lt(sessionMessages.createdAt, cutoff), or(isNull(sessionMessages.stream), exists(streamHasEnded)))),
  );
});
