import { afterAll, describe, expect, it } from 'vitest';

/**
 * The row caches of db/cache.ts. A read is on its way to the database when another instance changes the
 * row: the invalidation (PostgreSQL's notification) can arrive before the read's answer, which holds the
 * row as it was. That answer must not be kept, or a revoked token would be served from the cache again.
 */
process.env.DATABASE_PATH = ':memory:';
delete process.env.DATABASE_URL;
const { rowCache } = await import('@/db/cache');
const { closeStore } = await import('@/db/client');

afterAll(() => closeStore());

describe('RowCache', () => {
  it('does not keep a row read before an invalidation that arrived while the read was on its way', () => {
    const cache = rowCache<string, { revoked: boolean }>('test-invalidated-during-read', 10, 60_000);
    const stamp = cache.stamp();
    // The token is revoked elsewhere; its notification drops the entry before the read's answer is kept.
    cache.delete('token-hash');
    cache.set('token-hash', { revoked: false }, stamp);
    expect(cache.peek('token-hash')).toBeUndefined();

    // The same after an invalidation that empties the whole cache (a user changed).
    const beforeClear = cache.stamp();
    cache.clear();
    cache.set('token-hash', { revoked: false }, beforeClear);
    expect(cache.peek('token-hash')).toBeUndefined();
  });

  it('keeps a row read after the last invalidation, until the next one', () => {
    const cache = rowCache<string, { revoked: boolean }>('test-read-after-invalidation', 10, 60_000);
    cache.delete('token-hash');
    const stamp = cache.stamp();
    cache.set('token-hash', { revoked: true }, stamp);
    expect(cache.peek('token-hash')).toEqual({ revoked: true });
    cache.delete('token-hash');
    expect(cache.peek('token-hash')).toBeUndefined();
  });
});

describe('RowCache eviction', () => {
  it('evicts the entry read least recently, and keeps one read since', () => {
    const cache = rowCache<string, number>('test-eviction-order', 4, 60_000);
    for (const [index, key] of ['a', 'b', 'c', 'd'].entries()) cache.set(key, index, cache.stamp());
    // "a" is the oldest entry; reading it makes "b" the one read least recently.
    expect(cache.peek('a')).toBe(0);
    cache.set('e', 4, cache.stamp());
    expect(['a', 'b', 'c', 'd', 'e'].map((key) => cache.peek(key))).toEqual([0, undefined, 2, 3, 4]);
  });

  it('keeps a row that every other request reads, however many others pass through', () => {
    const cache = rowCache<string, number>('test-hot-entry', 8, 60_000);
    cache.set('hot', 1, cache.stamp());
    for (let i = 0; i < 100; i += 1) {
      cache.set(`cold-${i}`, i, cache.stamp());
      expect(cache.peek('hot')).toBe(1);
    }
    expect(cache.peek('cold-91')).toBeUndefined();
    expect(cache.peek('cold-99')).toBe(99);
  });
});
