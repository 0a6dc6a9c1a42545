import { sql } from 'drizzle-orm';
import { changed, defineQuery, lock, selected, type Program } from '../run';

/**
 * The streams open on every instance that shares PostgreSQL, one row each in `open_streams`
 * (drizzle-pg/0004_open_streams.sql), so that a per-user stream cap holds for the deployment. On SQLite
 * one process is the deployment and counts its streams in memory (lib/mcp/caps.ts): the table exists on
 * PostgreSQL only, and is not in db/schema.pg.ts, whose tables mirror db/schema.ts one for one. Hence
 * plain SQL here. A row counts until its `expires_at` (milliseconds since the epoch): the instance holding
 * the stream renews it while the stream is open, so the streams of an instance that died stop counting.
 */
export type StreamPlaceKind = 'mcp' | 'dashboard';

/**
 * Takes a place for one more stream of this user and kind, counted against `limit` over every instance
 * (Infinity: counted, never refused). Resolves with the row's id, or null when `limit` of the user's
 * streams are open already. Counting and inserting are one transaction, taken one at a time per user and
 * kind: two streams opened at once on two instances cannot both take the last place.
 */
export const insertStreamPlaceWithinLimit = defineQuery(
  function* (
    q,
    place: { userId: string; kind: StreamPlaceKind; sessionId: string | null; instanceId: string; expiresAt: number },
    limit: number,
    now: number,
  ): Program<string | null> {
    if (Number.isFinite(limit)) {
      yield* lock(q, `streams:${place.kind}:${place.userId}`);
      const [{ taken }] = yield* selected<{ taken: number }>(
        q,
        sql`select count(*) as taken from open_streams where user_id = ${place.userId} and kind = ${place.kind} and expires_at > ${now}`,
      );
      if (taken >= limit) return null;
    }
    const id = crypto.randomUUID();
    yield* changed(
      q,
      sql`insert into open_streams (id, user_id, kind, session_id, instance_id, expires_at)
          values (${id}, ${place.userId}, ${place.kind}, ${place.sessionId}, ${place.instanceId}, ${place.expiresAt})`,
    );
    return id;
  },
  { transaction: 'immediate' },
);

/** Gives a place back: its stream ended. */
export const deleteStreamPlaceById = defineQuery(function* (q, id: string): Program<number> {
  return yield* changed(q, sql`delete from open_streams where id = ${id}`);
});

/**
 * Keeps the places this instance holds counting until `expiresAt`. By id, not by instance: a place whose
 * deletion failed (the database was away for a moment) is not renewed, and stops counting on its own.
 */
export const renewStreamPlaces = defineQuery(function* (q, instanceId: string, ids: string[], expiresAt: number): Program<number> {
  if (ids.length === 0) return 0;
  return yield* changed(q, sql`update open_streams set expires_at = ${expiresAt} where instance_id = ${instanceId} and id = any(${sql.param(ids)}::text[])`);
});

/** Gives back every place of this instance at once: it is stopping, and its streams end with it. */
export const deleteStreamPlacesByInstanceId = defineQuery(function* (q, instanceId: string): Program<number> {
  return yield* changed(q, sql`delete from open_streams where instance_id = ${instanceId}`);
});

/** Deletes the places no instance renewed in time (theirs died): they no longer count anyway. */
export const deleteExpiredStreamPlaces = defineQuery(function* (q, now: number): Program<number> {
  return yield* changed(q, sql`delete from open_streams where expires_at <= ${now}`);
});

/**
 * The MCP sessions with a stream open on some instance: of one user, or of every user (`userId` null).
 * Empty on SQLite, which has no such table: there the process's own streams are all there are.
 */
export const listSessionIdsWithOpenStreams = defineQuery(function* (q, userId: string | null, now: number): Program<string[]> {
  if (q.dialect !== 'pg') return [];
  const ofUser = userId === null ? sql`` : sql` and user_id = ${userId}`;
  const found = yield* selected<{ session_id: string }>(
    q,
    sql`select distinct session_id from open_streams where session_id is not null and expires_at > ${now}${ofUser}`,
  );
  return found.map((row) => row.session_id);
});
