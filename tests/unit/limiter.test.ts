import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimiterPostgres, type RateLimiterRes } from 'rate-limiter-flexible';
import { queryRows, useFreshPostgres, type TestDatabase } from '../helpers/postgres';

/**
 * The PostgreSQL path of db/limiter.ts: limiter objects stand for instances of one deployment, and
 * those that share a keyPrefix share one count in the `rate_limits` table. (The SQLite path, one
 * count per object in this process's memory, is in limiter-sqlite.test.ts: the environment is read
 * once per process.)
 */
let database: TestDatabase;
let createLimiter: typeof import('@/db/limiter').createLimiter;
let close: () => Promise<void>;
let McpRateLimits: typeof import('@/lib/mcp/http/rate-limit').McpRateLimits;
let RegistrationLimiter: typeof import('@/lib/auth/oauth/registration-limits').RegistrationLimiter;

beforeAll(async () => {
  ({ database, close } = await useFreshPostgres());
  ({ createLimiter } = await import('@/db/limiter'));
  ({ McpRateLimits } = await import('@/lib/mcp/http/rate-limit'));
  ({ RegistrationLimiter } = await import('@/lib/auth/oauth/registration-limits'));
});

afterAll(async () => {
  await close?.();
});

/** The refusal a consumption rejected with, or fails the test when it was admitted. */
async function refusalOf(consumption: Promise<unknown>): Promise<Partial<RateLimiterRes>> {
  return consumption.then(
    () => expect.fail('the consumption was admitted'),
    (rejection: unknown) => rejection as Partial<RateLimiterRes>,
  );
}

describe('createLimiter on PostgreSQL', () => {
  it('gives separate limiters with one keyPrefix one count, as two instances would have', async () => {
    const first = createLimiter({ keyPrefix: 'test-shared', points: 3, duration: 60 });
    const second = createLimiter({ keyPrefix: 'test-shared', points: 3, duration: 60 });
    expect(first).toBeInstanceOf(RateLimiterPostgres);
    expect(first).not.toBe(second);

    expect((await first.consume('192.0.2.1')).consumedPoints).toBe(1);
    expect((await second.consume('192.0.2.1')).consumedPoints).toBe(2);
    expect((await first.consume('192.0.2.1')).consumedPoints).toBe(3);
    const refused = await refusalOf(second.consume('192.0.2.1'));
    expect(refused.consumedPoints).toBe(4);
    expect(refused.msBeforeNext).toBeGreaterThan(0);
    expect(refused.msBeforeNext).toBeLessThanOrEqual(60_000);

    const rows = await queryRows<{ key: string; points: number }>(database.url, "SELECT key, points FROM rate_limits WHERE key LIKE 'test-shared:%'");
    expect(rows).toEqual([{ key: 'test-shared:192.0.2.1', points: 4 }]);
  });

  it('keeps limits with different keyPrefixes apart in the one table', async () => {
    const exhausted = createLimiter({ keyPrefix: 'test-apart-a', points: 1, duration: 60 });
    const other = createLimiter({ keyPrefix: 'test-apart-b', points: 1, duration: 60 });
    await exhausted.consume('same key');
    await refusalOf(exhausted.consume('same key'));
    expect((await other.consume('same key')).consumedPoints).toBe(1);
  });

  it('shares the /mcp limits of two McpRateLimits, and refuses with a 429 that says when to retry', async () => {
    const limits = { perToken: 3, perUser: 100, taskOperationsPerUser: 100, unknownTasksPerUser: 100 };
    const caller = { userId: 'user-1', tokenId: 'token-1' };
    const instanceA = new McpRateLimits(limits);
    const instanceB = new McpRateLimits(limits);
    await instanceA.admit(caller, undefined);
    await instanceB.admit(caller, undefined);
    await instanceA.admit(caller, undefined);
    const refused = await instanceB.admit(caller, undefined).then(
      () => expect.fail('the request was admitted'),
      (error: unknown) => error as { status: number; headers: Record<string, string> },
    );
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['Retry-After'])).toBeGreaterThan(0);
  });

  it('shares the registration count of two RegistrationLimiters', async () => {
    const instanceA = new RegistrationLimiter(2);
    const instanceB = new RegistrationLimiter(2);
    expect(await instanceA.check(100, '198.51.100.1')).toBeNull();
    expect(await instanceB.check(100, '198.51.100.1')).toBeNull();
    const refused = await instanceA.check(100, '198.51.100.1');
    expect(refused?.status).toBe(429);
    expect(Number(refused?.headers['Retry-After'])).toBeGreaterThan(60 * 60 - 10);
  });
});
