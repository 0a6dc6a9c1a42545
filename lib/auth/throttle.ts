import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { createLimiter } from '@/db/limiter';
import { getEnv } from '@/lib/env';
import { retryAfterFromError, tooManyAttemptsError, tooManyAttemptsMessage } from './throttle-message';

/**
 * Sign-in and sign-up attempts, counted over AUTH_THROTTLE_WINDOW_SECONDS (db/limiter.ts). On SQLite
 * the counts live in this process's memory, which is the whole deployment there, and a restart forgets
 * them; on PostgreSQL every instance counts in the same table, so a client gets each limit once per
 * deployment whichever instance it reaches, and a restart forgets nothing.
 */
type Limiters = {
  signInByIp: RateLimiterAbstract;
  signInByAccountAndIp: RateLimiterAbstract;
  signInByAccount: RateLimiterAbstract;
  signUpByIp: RateLimiterAbstract;
  signUpByAccount: RateLimiterAbstract;
};

export type ThrottleVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

const globalForThrottle = globalThis as unknown as { __mcpTaskServerThrottles?: Limiters };

function limiters(): Limiters {
  if (globalForThrottle.__mcpTaskServerThrottles) return globalForThrottle.__mcpTaskServerThrottles;
  const env = getEnv();
  const duration = env.AUTH_THROTTLE_WINDOW_SECONDS;
  const created: Limiters = {
    signInByIp: createLimiter({ keyPrefix: 'signin-ip', points: env.SIGNIN_MAX_PER_IP, duration }),
    signInByAccountAndIp: createLimiter({ keyPrefix: 'signin-account-ip', points: env.SIGNIN_MAX_PER_ACCOUNT, duration }),
    signInByAccount: createLimiter({ keyPrefix: 'signin-account', points: env.SIGNIN_MAX_PER_ACCOUNT_ALL_ADDRESSES, duration }),
    signUpByIp: createLimiter({ keyPrefix: 'signup-ip', points: env.SIGNUP_MAX_PER_IP, duration }),
    signUpByAccount: createLimiter({ keyPrefix: 'signup-account', points: env.SIGNIN_MAX_PER_ACCOUNT, duration }),
  };
  globalForThrottle.__mcpTaskServerThrottles = created;
  return created;
}

function refusal(error: unknown): ThrottleVerdict {
  // Not `instanceof RateLimiterRes`: the limiters are shared across Next's bundles through globalThis,
  // and each bundle has its own copy of the class.
  const refused = error as Partial<RateLimiterRes> | undefined;
  if (typeof refused?.msBeforeNext !== 'number') throw error;
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(refused.msBeforeNext / 1000)) };
}

/**
 * Counts against each limit in turn and stops at the first that refuses, so an attempt refused for
 * its address does not also spend the account's allowance: the owner's sign-ins draw on it too.
 */
async function consumeInTurn(consumptions: Array<() => Promise<RateLimiterRes>>): Promise<ThrottleVerdict> {
  for (const consume of consumptions) {
    try {
      await consume();
    } catch (error) {
      return refusal(error);
    }
  }
  return { allowed: true };
}

const accountKey = (email: string) => email.trim().toLowerCase();
const accountAndAddressKey = (email: string, address: string) => `${accountKey(email)} ${address}`;

/**
 * Counts one sign-in attempt: per address, per account from that address, and per account from all
 * addresses with a much higher ceiling, so that guessing from one place cannot lock the owner out.
 * A successful sign-in clears the account's count across addresses and its count from that address (`forgetSignInAttempts`).
 */
export function throttleSignIn(input: { address: string; email: string }): Promise<ThrottleVerdict> {
  const { signInByIp, signInByAccountAndIp, signInByAccount } = limiters();
  return consumeInTurn([
    () => signInByIp.consume(input.address),
    () => signInByAccountAndIp.consume(accountAndAddressKey(input.email, input.address)),
    () => signInByAccount.consume(accountKey(input.email)),
  ]);
}

export async function forgetSignInAttempts(input: { address: string; email: string }): Promise<void> {
  const { signInByAccountAndIp, signInByAccount } = limiters();
  await Promise.all([signInByAccountAndIp.delete(accountAndAddressKey(input.email, input.address)), signInByAccount.delete(accountKey(input.email))]);
}

export function throttleSignUp(input: { address: string; email: string }): Promise<ThrottleVerdict> {
  const { signUpByIp, signUpByAccount } = limiters();
  return consumeInTurn([() => signUpByIp.consume(input.address), () => signUpByAccount.consume(accountKey(input.email))]);
}

/**
 * NextAuth answers every refused email-and-password sign-in with the reason in a URL: a 401 carrying it
 * as JSON when the request asked for JSON (`json=true`, as its browser client does), else a redirect.
 * The throttle's refusal is thrown from `authorize`, where NextAuth has parsed the request; this turns it
 * into 429 with Retry-After either way, its body in the shape NextAuth's client reads (`url` with
 * `error`), so the sign-in form can say how long to wait. Any other response passes unchanged.
 */
export async function answerThrottledSignIn(response: Response): Promise<Response> {
  if (response.status !== 401 && response.status !== 302) return response;
  const redirect = response.headers.get('location') ?? (await response.clone().json().catch(() => null))?.url;
  if (typeof redirect !== 'string') return response;
  const retryAfterSeconds = retryAfterFromError(new URL(redirect, getEnv().APP_URL).searchParams.get('error'));
  if (retryAfterSeconds === null) return response;
  const signInUrl = new URL('/signin', getEnv().APP_URL);
  signInUrl.searchParams.set('error', tooManyAttemptsError(retryAfterSeconds));
  return Response.json(
    { url: signInUrl.toString(), message: tooManyAttemptsMessage(retryAfterSeconds) },
    { status: 429, headers: { 'Retry-After': String(retryAfterSeconds) } },
  );
}
