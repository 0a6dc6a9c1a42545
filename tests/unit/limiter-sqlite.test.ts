import { afterAll, describe, expect, it } from 'vitest';

/**
 * The SQLite default of db/limiter.ts: one process is the whole deployment, so each limiter counts in
 * its own memory, and two objects never share a count even with one keyPrefix.
 */
process.env.DATABASE_PATH = ':memory:';
delete process.env.DATABASE_URL;
const { createLimiter } = await import('@/db/limiter');
const { closeStore } = await import('@/db/client');
const { RateLimiterMemory } = await import('rate-limiter-flexible');

afterAll(() => closeStore());

describe('createLimiter on SQLite', () => {
  it('counts in memory, each limiter object on its own', async () => {
    const first = createLimiter({ keyPrefix: 'test-shared', points: 3, duration: 60 });
    const second = createLimiter({ keyPrefix: 'test-shared', points: 3, duration: 60 });
    expect(first).toBeInstanceOf(RateLimiterMemory);
    expect(second).toBeInstanceOf(RateLimiterMemory);

    for (const limiter of [first, second, first, second]) await limiter.consume('192.0.2.1');
    expect((await first.get('192.0.2.1'))?.consumedPoints).toBe(2);
    expect((await second.get('192.0.2.1'))?.consumedPoints).toBe(2);
    expect((await first.consume('192.0.2.1')).consumedPoints).toBe(3);
    await expect(first.consume('192.0.2.1')).rejects.toMatchObject({ consumedPoints: 4 });
  });
});
