/**
 * Whether an error means the database cannot be reached right now (PostgreSQL down, restarting or out
 * of connections; the network between), as opposed to a fault in the request or in the code. Such a
 * request is answered 503 with Retry-After: retrying later is the whole remedy.
 */
const unavailableCodes = new Set([
  // Node's socket errors.
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  // PostgreSQL: connection exceptions (class 08), the server shutting down or starting (57P01-57P03),
  // too many connections (53300).
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/** node-postgres says so in words when a connection ends or cannot be had in time. */
const unavailableMessages = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed/i;

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && unavailableCodes.has(code)) return true;
    if (unavailableMessages.test(current.message)) return true;
    // AggregateError (a connect that tried several addresses).
    if (current instanceof AggregateError && current.errors.some((inner) => isDatabaseUnavailable(inner))) return true;
  }
  return false;
}
