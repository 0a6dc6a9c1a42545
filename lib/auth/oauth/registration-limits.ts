/** A client's registration is a few hundred bytes; this leaves room for long names and many redirect URIs. */
export const maxRegistrationBytes = 8 * 1024;
const windowMs = 60 * 60 * 1000;
/** Bounded memory: beyond this many addresses the oldest windows are forgotten. */
const maxTrackedAddresses = 10_000;

export interface Refusal {
  status: number;
  error: string;
  description: string;
  headers: Record<string, string>;
}

/**
 * Limits on Dynamic Client Registration (RFC 7591 leaves them to the server): a size cap, and a
 * number of registrations per hour from one client address, counted in this process (a deployment of
 * several instances gets the limit once per instance).
 */
export class RegistrationLimiter {
  private readonly windows = new Map<string, { startedAt: number; count: number }>();

  constructor(private readonly perHour: number) {}

  /** Null when a registration of `bodyBytes` from `address` may go ahead (and counts it), else why not. */
  check(bodyBytes: number, address: string, now = Date.now()): Refusal | null {
    if (bodyBytes > maxRegistrationBytes) {
      return {
        status: 413,
        error: 'invalid_client_metadata',
        description: `client metadata larger than ${maxRegistrationBytes} bytes`,
        headers: {},
      };
    }
    let window = this.windows.get(address);
    if (!window || now - window.startedAt >= windowMs) {
      this.windows.delete(address);
      if (this.windows.size >= maxTrackedAddresses) this.windows.delete(this.windows.keys().next().value!);
      window = { startedAt: now, count: 0 };
      this.windows.set(address, window);
    }
    if (window.count >= this.perHour) {
      const retryAfter = Math.ceil((window.startedAt + windowMs - now) / 1000);
      return {
        status: 429,
        error: 'temporarily_unavailable',
        description: 'too many registrations from this address; try again later',
        headers: { 'Retry-After': String(retryAfter) },
      };
    }
    window.count += 1;
    return null;
  }
}
