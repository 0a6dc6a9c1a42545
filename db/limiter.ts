import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
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
  return new SharedLimiter({
    ...options,
    storeClient: store.pool,
    storeType: 'pool',
    // Created by drizzle-pg/0003_rate_limits.sql, before any instance serves.
    tableName: 'rate_limits',
    tableCreated: true,
    insuranceLimiter: new RateLimiterMemory(options),
  });
}

/**
 * Whether this process counts in memory because PostgreSQL did not answer. Process-wide, on
 * globalThis, so that every limit (in every bundle of this module) says it once per outage together.
 */
const limitsState = globalThis as unknown as { __mcpTaskServerLimitsInMemory?: boolean };

/**
 * A limiter on PostgreSQL that tells the operator when its counting moves to memory, where each instance
 * counts alone and a limit holds per instance only, and when it is back. It hooks the library's two
 * steps that see this: every failed store operation passes `_handleError` (a refusal is a
 * `RateLimiterRes`, not a failure), and every consume the store answered passes `_afterConsume`.
 */
class SharedLimiter extends RateLimiterPostgres {
  _handleError(error: unknown, ...rest: unknown[]): void {
    if (!(error instanceof RateLimiterRes) && !limitsState.__mcpTaskServerLimitsInMemory) {
      limitsState.__mcpTaskServerLimitsInMemory = true;
      const reason = error instanceof Error ? error.message : String(error);
      console.error(`Rate limits are counted in this instance's memory until PostgreSQL answers again (${reason}): meanwhile each instance counts only its own requests.`);
    }
    libraryStep('_handleError').call(this, error, ...rest);
  }

  _afterConsume(...args: unknown[]): void {
    if (limitsState.__mcpTaskServerLimitsInMemory) {
      limitsState.__mcpTaskServerLimitsInMemory = false;
      console.error('Rate limits are counted in PostgreSQL again, for every instance together.');
    }
    libraryStep('_afterConsume').call(this, ...args);
  }
}

/** The library's own implementation of a step SharedLimiter hooks (not part of its typed interface). */
function libraryStep(name: '_handleError' | '_afterConsume'): (...args: unknown[]) => void {
  return (RateLimiterPostgres.prototype as unknown as Record<string, (...args: unknown[]) => void>)[name];
}
