import { RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { getStore } from './client';

export interface LimiterOptions {
  /** Keeps one limit's keys apart from another's in the shared table. */
  keyPrefix: string;
  points: number;
  /** The window, in seconds. */
  duration: number;
}

/**
 * A fixed-window counter (rate-limiter-flexible): in this process's memory on SQLite (one process is
 * the whole deployment), in PostgreSQL's `rate_limits` table when instances share a database, so that
 * a limit holds for the deployment whichever instance a request reaches. Should PostgreSQL stop
 * answering, the counting goes on in memory (the library's insurance limiter) rather than refusing
 * everyone or admitting everyone.
 */
export function createLimiter(options: LimiterOptions): RateLimiterAbstract {
  const store = getStore();
  if (store.dialect === 'sqlite') return new RateLimiterMemory(options);
  return new RateLimiterPostgres({
    ...options,
    storeClient: store.pool,
    storeType: 'pool',
    // Created by drizzle-pg/0003_rate_limits.sql, before any instance serves.
    tableName: 'rate_limits',
    tableCreated: true,
    insuranceLimiter: new RateLimiterMemory(options),
  });
}
