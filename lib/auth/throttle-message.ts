/**
 * How a refused sign-in reaches the form: NextAuth hands the browser only the `error` of its reply's URL,
 * so the wait travels inside it (`TooManyAttempts:42`). Shared by the server that writes it and the form.
 */
const errorPrefix = 'TooManyAttempts:';

export function tooManyAttemptsError(retryAfterSeconds: number): string {
  return `${errorPrefix}${retryAfterSeconds}`;
}

export function tooManyAttemptsMessage(retryAfterSeconds: number): string {
  return `Too many attempts, try again in ${retryAfterSeconds} s.`;
}

/** The wait a refused sign-in's error carries, or null for any other error. */
export function retryAfterFromError(error: string | null | undefined): number | null {
  if (!error?.startsWith(errorPrefix)) return null;
  const seconds = Number(error.slice(errorPrefix.length));
  return Number.isInteger(seconds) && seconds > 0 ? seconds : null;
}
