import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { createLimiter } from '@/db/limiter';
import { getEnv } from '@/lib/env';
import type { Caller } from '../core/context';
import { HttpError } from '../core/errors';
import type { MessageSummary } from './request-facts';

/**
 * JSON-RPC error code of a refusal for too many requests (HTTP says 429). Outside JSON-RPC's reserved
 * -32768…-32000: 2026-07-28 keeps -32020…-32099 for codes the specification defines, and asks new
 * codes of an implementation to be allocated outside the reserved range; the same code serves both eras.
 */
export const rateLimitedCode = -31429;

/** Requests per minute; 0 switches a limit off. */
export interface RateLimits {
  perToken: number;
  perUser: number;
  taskOperationsPerUser: number;
  unknownTasksPerUser: number;
}

const taskOperations = new Set(['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel', 'tasks/update']);
const taskLookups = new Set(['tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/update']);

/** `keyPrefix` keeps each limit's counts apart in the table that instances share. */
const minuteLimiter = (keyPrefix: string, points: number) => (points > 0 ? createLimiter({ keyPrefix, points, duration: 60 }) : undefined);

/** A 429 refusal saying what was exceeded and when to try again (Retry-After and `error.data`). */
export function refusal(what: string, msBeforeNext: number): HttpError {
  const retryAfterSeconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
  return new HttpError(
    429,
    rateLimitedCode,
    `Too Many Requests: ${what}; retry after ${retryAfterSeconds} seconds`,
    { 'Retry-After': String(retryAfterSeconds) },
    { retryAfterSeconds },
  );
}

/**
 * The /mcp rate limits: fixed one-minute windows (db/limiter.ts), counted in memory on SQLite and in
 * PostgreSQL when instances share it, so a limit holds for the deployment whichever instance a request
 * reaches. The Tasks specification asks receivers to rate-limit task operations; lookups of task ids
 * that do not exist are counted apart, so probing for ids is slowed far sooner than normal polling.
 */
export class McpRateLimits {
  private readonly perToken;
  private readonly perUser;
  private readonly taskOperations;
  private readonly unknownTasks;

  constructor(private readonly limits: RateLimits) {
    this.perToken = minuteLimiter('mcp-token', limits.perToken);
    this.perUser = minuteLimiter('mcp-user', limits.perUser);
    this.taskOperations = minuteLimiter('mcp-task-ops', limits.taskOperationsPerUser);
    this.unknownTasks = minuteLimiter('mcp-unknown-tasks', limits.unknownTasksPerUser);
  }

  /** Counts one request of this caller, or throws a 429 HttpError saying when to retry. */
  async admit(caller: Caller, message: MessageSummary | undefined): Promise<void> {
    // Each message of a batch counts as one request.
    const count = Math.max(1, message?.batchSize ?? 1);
    await take(this.perToken, `token:${caller.tokenId}`, 'this access token sent too many requests', count);
    await take(this.perUser, `user:${caller.userId}`, 'this account sent too many requests', count);
    const method = message?.method;
    if (!method) return;
    if ((taskLookups.has(method) || (message.taskTool && message.tool !== 'task_list')) && this.unknownTasks) {
      const probing = await this.unknownTasks.get(caller.userId);
      if (probing && probing.consumedPoints >= this.limits.unknownTasksPerUser) {
        throw refusal('too many lookups of tasks that do not exist', probing.msBeforeNext);
      }
    }
    if (taskOperations.has(method) || message.asTask || message.taskTool) {
      await take(this.taskOperations, `user:${caller.userId}`, 'this account sent too many task operations');
    }
  }

  /** Counts a lookup of a task id that this user has no task with. */
  async noteUnknownTask(userId: string): Promise<void> {
    await this.unknownTasks?.consume(userId).catch(() => {});
  }
}

async function take(limiter: RateLimiterAbstract | undefined, key: string, what: string, points = 1): Promise<void> {
  if (!limiter) return;
  try {
    await limiter.consume(key, points);
  } catch (rejection) {
    // Not `instanceof RateLimiterRes`: the limits are shared across Next's bundles through globalThis,
    // and each bundle has its own copy of the class. Anything else (the database failing) is no refusal.
    const refused = rejection as Partial<RateLimiterRes> | undefined;
    if (typeof refused?.msBeforeNext === 'number') throw refusal(what, refused.msBeforeNext);
    throw rejection;
  }
}

const globalForLimits = globalThis as unknown as { __mcpTaskServerRateLimits?: McpRateLimits };

/** The limits, from the configuration; one set per process, shared by every bundle that loads this module. */
export function getRateLimits(): McpRateLimits {
  if (!globalForLimits.__mcpTaskServerRateLimits) {
    const env = getEnv();
    globalForLimits.__mcpTaskServerRateLimits = new McpRateLimits({
      perToken: env.RATE_LIMIT_PER_TOKEN,
      perUser: env.RATE_LIMIT_PER_USER,
      taskOperationsPerUser: env.RATE_LIMIT_TASK_OPERATIONS_PER_USER,
      unknownTasksPerUser: env.RATE_LIMIT_UNKNOWN_TASKS_PER_USER,
    });
  }
  return globalForLimits.__mcpTaskServerRateLimits;
}
