import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { createLimiter } from '@/db/limiter';

/** A client's registration is a few hundred bytes; this leaves room for long names and many redirect URIs. */
export const maxRegistrationBytes = 8 * 1024;

export interface Refusal {
  status: number;
  error: string;
  description: string;
  headers: Record<string, string>;
}

/**
 * Limits on Dynamic Client Registration (RFC 7591 leaves them to the server): a size cap, and a
 * number of registrations per hour from one client address, in a fixed window (db/limiter.ts): counted
 * in memory on SQLite, and in PostgreSQL when instances share it, so the limit holds for the deployment.
 */
export class RegistrationLimiter {
  private readonly limiter: RateLimiterAbstract;

  constructor(perHour: number) {
    this.limiter = createLimiter({ keyPrefix: 'oauth-registration', points: perHour, duration: 60 * 60 });
  }

  /** Null when a registration of `bodyBytes` from `address` may go ahead (and counts it), else why not. */
  async check(bodyBytes: number, address: string): Promise<Refusal | null> {
    if (bodyBytes > maxRegistrationBytes) {
      return {
        status: 413,
        error: 'invalid_client_metadata',
        description: `client metadata larger than ${maxRegistrationBytes} bytes`,
        headers: {},
      };
    }
    try {
      await this.limiter.consume(address);
      return null;
    } catch (rejection) {
      // Not `instanceof RateLimiterRes`: bundles may each hold their own copy of the class. Anything
      // else (the database failing) is no refusal, and is thrown on.
      const refused = rejection as Partial<RateLimiterRes> | undefined;
      if (typeof refused?.msBeforeNext !== 'number') throw rejection;
      const retryAfter = Math.max(1, Math.ceil(refused.msBeforeNext / 1000));
      return {
        status: 429,
        error: 'temporarily_unavailable',
        description: 'too many registrations from this address; try again later',
        headers: { 'Retry-After': String(retryAfter) },
      };
    }
  }
}
