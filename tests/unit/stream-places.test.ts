import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows, useFreshPostgres, type TestDatabase } from '../helpers/postgres';

/**
 * The PostgreSQL path of the stream caps: the places in `open_streams` (db/queries/stream-places.ts),
 * taken by instances that share the database, and the way lib/mcp/caps.ts holds, renews and gives back
 * this process's places. (On SQLite the caps count in memory; tests/integration/caps.test.ts covers both.)
 */
let database: TestDatabase;
let close: () => Promise<void>;
let places: typeof import('@/db/queries/stream-places');
let caps: typeof import('@/lib/mcp/http/caps');
let instanceId: string;

beforeAll(async () => {
  ({ database, close } = await useFreshPostgres());
  places = await import('@/db/queries/stream-places');
  caps = await import('@/lib/mcp/http/caps');
  ({ instanceId } = await import('@/lib/instance'));
});

afterAll(async () => {
  await close?.();
});

const rowsOf = (userId: string) =>
  queryRows<{ id: string; kind: string; session_id: string | null; instance_id: string; expires_at: number }>(
    database.url,
    'SELECT id, kind, session_id, instance_id, expires_at::float8 AS expires_at FROM open_streams WHERE user_id = $1 ORDER BY expires_at',
    [userId],
  );

function take(userId: string, limit: number, options: { kind?: 'mcp' | 'dashboard'; sessionId?: string; instance?: string; expiresAt?: number } = {}) {
  const now = Date.now();
  return places.insertStreamPlaceWithinLimit(
    { userId, kind: options.kind ?? 'mcp', sessionId: options.sessionId ?? null, instanceId: options.instance ?? 'instance-a', expiresAt: options.expiresAt ?? now + 30_000 },
    limit,
    now,
  );
}

describe('stream places on PostgreSQL', () => {
  it("counts a user's places of one kind over every instance, and Infinity counts past the limit", async () => {
    expect(await take('u1', 2, { instance: 'instance-a' })).toEqual(expect.any(String));
    expect(await take('u1', 2, { instance: 'instance-b' })).toEqual(expect.any(String));
    expect(await take('u1', 2, { instance: 'instance-c' })).toBeNull();
    // Another kind, another user: counted apart.
    expect(await take('u1', 2, { kind: 'dashboard' })).toEqual(expect.any(String));
    expect(await take('u2', 2)).toEqual(expect.any(String));
    expect(await take('u1', Infinity)).toEqual(expect.any(String));
    expect((await rowsOf('u1')).filter((row) => row.kind === 'mcp')).toHaveLength(3);
    expect(await take('u1', 3)).toBeNull();
  });

  it('gives the last place to exactly one of many takers at once', async () => {
    const taken = await Promise.all(Array.from({ length: 12 }, (_, index) => take('racing', 3, { instance: `instance-${index % 3}` })));
    expect(taken.filter((id) => id !== null)).toHaveLength(3);
    expect(await rowsOf('racing')).toHaveLength(3);
  });

  it('stops counting a place that lapsed, renews only the places named, and deletes what lapsed', async () => {
    const now = Date.now();
    const lapsed = await take('u3', 2, { expiresAt: now - 1 });
    const kept = await take('u3', 2, { expiresAt: now + 5_000, instance: 'instance-a' });
    const forgotten = await take('u3', 2, { expiresAt: now + 5_000, instance: 'instance-a' });
    expect([lapsed, kept, forgotten].every((id) => id !== null)).toBe(true);
    expect(await take('u3', 2)).toBeNull();

    expect(await places.renewStreamPlaces('instance-a', [kept!], now + 60_000)).toBe(1);
    // Another instance cannot renew this one's places.
    expect(await places.renewStreamPlaces('instance-b', [forgotten!], now + 60_000)).toBe(0);
    const rows = await rowsOf('u3');
    expect(rows.find((row) => row.id === kept)?.expires_at).toBe(now + 60_000);
    expect(rows.find((row) => row.id === forgotten)?.expires_at).toBe(now + 5_000);

    expect(await places.deleteExpiredStreamPlaces(now)).toBeGreaterThanOrEqual(1);
    expect((await rowsOf('u3')).map((row) => row.id).sort()).toEqual([kept, forgotten].sort());
  });

  it('lists the sessions with a live place, of one user or of all, and deletes the places of an instance', async () => {
    const now = Date.now();
    await take('u4', 10, { sessionId: 'session-a', instance: 'stopping' });
    await take('u4', 10, { sessionId: 'session-a', instance: 'staying' });
    await take('u4', 10, { sessionId: 'session-b', instance: 'stopping' });
    await take('u4', 10, { sessionId: 'session-lapsed', expiresAt: now - 1 });
    await take('u4', 10, { kind: 'dashboard' });
    await take('u5', 10, { sessionId: 'session-c' });
    expect((await places.listSessionIdsWithOpenStreams('u4', now)).sort()).toEqual(['session-a', 'session-b']);
    expect(await places.listSessionIdsWithOpenStreams(null, now)).toEqual(expect.arrayContaining(['session-a', 'session-b', 'session-c']));
    expect(await places.listSessionIdsWithOpenStreams(null, now)).not.toContain('session-lapsed');

    expect(await places.deleteStreamPlacesByInstanceId('stopping')).toBe(2);
    expect(await places.listSessionIdsWithOpenStreams('u4', now)).toEqual(['session-a']);
  });
});

describe('the caps of lib/mcp/caps.ts on PostgreSQL', () => {
  it('takes a place in the table, refuses at the cap with the 429, and gives the place back once', async () => {
    const first = await caps.takeStreamPlace('dashboard', 'caps-user', 1);
    expect(first).not.toBeNull();
    expect(await caps.takeStreamPlace('dashboard', 'caps-user', 1)).toBeNull();
    const [row] = await rowsOf('caps-user');
    expect(row).toMatchObject({ kind: 'dashboard', session_id: null, instance_id: instanceId });

    first!.release();
    first!.release();
    await expect.poll(() => rowsOf('caps-user')).toEqual([]);
    expect(await caps.takeStreamPlace('dashboard', 'caps-user', 1)).not.toBeNull();

    const mcp = await caps.takeMcpStreamPlace('caps-mcp-user', 'session-1');
    expect((await rowsOf('caps-mcp-user'))[0]).toMatchObject({ kind: 'mcp', session_id: 'session-1' });
    expect(await caps.sessionsWithStreamOpen(['local-session'])).toEqual(expect.arrayContaining(['local-session', 'session-1']));
    mcp.release();
    await expect.poll(() => rowsOf('caps-mcp-user')).toEqual([]);
  });

  it("renews this process's places, and gives them all back when it stops", async () => {
    const held = await caps.takeStreamPlace('mcp', 'renewed-user', 10, 'session-r');
    const released = await caps.takeStreamPlace('mcp', 'renewed-user', 10, 'session-r');
    released!.release();
    await expect.poll(async () => (await rowsOf('renewed-user')).length).toBe(1);
    await queryRows(database.url, 'UPDATE open_streams SET expires_at = 1 WHERE user_id = $1', ['renewed-user']);
    // A row left behind by a failed deletion: this instance's, but no place it holds.
    await take('renewed-user', Infinity, { instance: instanceId, expiresAt: 1 });

    const before = Date.now();
    await caps.renewStreamPlaces();
    const rows = await rowsOf('renewed-user');
    expect(rows.map((row) => row.expires_at)).toEqual([1, expect.any(Number)]);
    expect(rows[1].expires_at).toBeGreaterThanOrEqual(before + caps.streamPlaceTtlMs);

    await caps.giveBackStreamPlaces();
    expect(await queryRows(database.url, 'SELECT id FROM open_streams WHERE instance_id = $1', [instanceId])).toEqual([]);
    held!.release();
  });
});
