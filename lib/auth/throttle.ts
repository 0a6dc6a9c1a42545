import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import { getEnv } from '@/lib/env';
import { clientAddress } from './client-address';
import { tooManyAttemptsError, tooManyAttemptsMessage } from './throttle-message';

/**
 * Sign-in and sign-up attempts, counted per client address and per account (email) over
 * AUTH_THROTTLE_WINDOW_SECONDS. The counts live in this process's memory: with several instances each
 * counts on its own (a client gets the limit once per instance), and a restart forgets them; instances
 * sharing a database would switch to one of the library's shared stores (RateLimiterPostgres, Redis).
 */
type Limiters = { signInByIp: RateLimiterMemory; signInByAccount: RateLimiterMemory; signUpByIp: RateLimiterMemory; signUpByAccount: RateLimiterMemory };

export type ThrottleVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

const globalForThrottle = globalThis as unknown as { __mcpTaskServerThrottles?: Limiters };

function limiters(): Limiters {
  if (globalForThrottle.__mcpTaskServerThrottles) return globalForThrottle.__mcpTaskServerThrottles;
  const env = getEnv();
  const duration = env.AUTH_THROTTLE_WINDOW_SECONDS;
  const created: Limiters = {
    signInByIp: new RateLimiterMemory({ keyPrefix: 'signin-ip', points: env.SIGNIN_MAX_PER_IP, duration }),
    signInByAccount: new RateLimiterMemory({ keyPrefix: 'signin-account', points: env.SIGNIN_MAX_PER_ACCOUNT, duration }),
    signUpByIp: new RateLimiterMemory({ keyPrefix: 'signup-ip', points: env.SIGNUP_MAX_PER_IP, duration }),
    signUpByAccount: new RateLimiterMemory({ keyPrefix: 'signup-account', points: env.SIGNIN_MAX_PER_ACCOUNT, duration }),
  };
  globalForThrottle.__mcpTaskServerThrottles = created;
  return created;
}

async function consumeAll(consumptions: Array<Promise<RateLimiterRes>>): Promise<ThrottleVerdict> {
  const outcomes = await Promise.allSettled(consumptions);
  let waitMs = 0;
  for (const outcome of outcomes) {
    if (outcome.status === 'fulfilled') continue;
    // Not `instanceof RateLimiterRes`: the limiters are shared across Next's bundles through globalThis,
    // and each bundle has its own copy of the class.
    const refusal = outcome.reason as Partial<RateLimiterRes> | undefined;
    if (typeof refusal?.msBeforeNext !== 'number') throw outcome.reason;
    waitMs = Math.max(waitMs, refusal.msBeforeNext);
  }
  return waitMs > 0 ? { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) } : { allowed: true };
}

/** Counts one sign-in attempt; a successful one clears the account's count (`forgetSignInAttempts`). */
export function throttleSignIn(input: { address: string; email: string }): Promise<ThrottleVerdict> {
  const { signInByIp, signInByAccount } = limiters();
  return consumeAll([signInByIp.consume(input.address), signInByAccount.consume(input.email.trim().toLowerCase())]);
}

export async function forgetSignInAttempts(email: string): Promise<void> {
  await limiters().signInByAccount.delete(email.trim().toLowerCase());
}

export function throttleSignUp(input: { address: string; email: string }): Promise<ThrottleVerdict> {
  const { signUpByIp, signUpByAccount } = limiters();
  return consumeAll([signUpByIp.consume(input.address), signUpByAccount.consume(input.email.trim().toLowerCase())]);
}

const credentialsCallbackPath = '/api/auth/callback/credentials';

/**
 * For NextAuth's POST routes: a throttled email-and-password sign-in gets 429 with Retry-After here,
 * before NextAuth checks anything. The body keeps the shape NextAuth's client reads (`url` with `error`),
 * so the sign-in form can say how long to wait. Any other request gets null and goes on to NextAuth.
 */
export async function refuseThrottledSignIn(request: Request): Promise<Response | null> {
  if (!new URL(request.url).pathname.endsWith(credentialsCallbackPath)) return null;
  let email = '';
  try {
    const form = await request.clone().formData();
    email = String(form.get('email') ?? '');
  } catch {
    return null;
  }
  const verdict = await throttleSignIn({ address: clientAddress(request.headers), email });
  if (verdict.allowed) return null;
  const signInUrl = new URL('/signin', getEnv().APP_URL);
  signInUrl.searchParams.set('error', tooManyAttemptsError(verdict.retryAfterSeconds));
  return Response.json(
    { url: signInUrl.toString(), message: tooManyAttemptsMessage(verdict.retryAfterSeconds) },
    { status: 429, headers: { 'Retry-After': String(verdict.retryAfterSeconds) } },
  );
}
