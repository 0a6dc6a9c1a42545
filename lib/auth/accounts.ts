import { z } from 'zod';
import { deleteNotificationSetupByUserId, deletePushTargetsOfEndedSessions } from '@/db/queries/notifications';
import { deleteOAuthGrantsByUserId } from '@/db/queries/oauth';
import { revokeAccessTokensByUserId } from '@/db/queries/tokens';
import {
  createUser,
  getUserByEmail,
  incrementUserSessionGeneration,
  insertLinkedAccount,
  removeUserPassword,
  setUserEmailVerified,
  setUserPasswordHash,
  setUserReclaimed,
  type User,
} from '@/db/queries/users';
import { defineQuery, inTransaction, type Program, type QueryContext } from '@/db/run';
import { hashPassword, passwordRules } from './password';

export const emailSchema = z.email('Enter a valid email address.').max(254).transform((email) => email.trim().toLowerCase());
export const passwordSchema = z
  .string()
  .min(passwordRules.minLength, `Use at least ${passwordRules.minLength} characters.`)
  .max(passwordRules.maxLength, `Use at most ${passwordRules.maxLength} characters.`);

export type SignUpResult = { ok: true; user: User } | { ok: false; field: 'email' | 'password' | 'name'; message: string };

/** Creates an account with a password. A user made by token:create (no password yet) cannot be claimed here. */
export async function registerUser(input: { email: unknown; password: unknown; name?: unknown }): Promise<SignUpResult> {
  const email = emailSchema.safeParse(typeof input.email === 'string' ? input.email.trim() : input.email);
  if (!email.success) return { ok: false, field: 'email', message: email.error.issues[0].message };
  const password = passwordSchema.safeParse(input.password);
  if (!password.success) return { ok: false, field: 'password', message: password.error.issues[0].message };
  const givenName = typeof input.name === 'string' ? input.name.trim() : '';
  // Shown on pages and in e-mails, and kept as text (PostgreSQL's holds no U+0000).
  if (/[\u0000-\u001f\u007f]/.test(givenName)) return { ok: false, field: 'name', message: 'A name cannot hold control characters.' };
  // At most 100 characters, never cut between the halves of one.
  const name = givenName ? Array.from(givenName.toWellFormed()).slice(0, 100).join('') : null;
  // Hashed before looking the email up: saying that an account exists costs a hash, as a sign-in does.
  const passwordHash = await hashPassword(password.data);
  if (await getUserByEmail(email.data)) {
    return { ok: false, field: 'email', message: 'An account with this email already exists. Sign in instead.' };
  }
  try {
    return { ok: true, user: await createUser({ email: email.data, name, passwordHash }) };
  } catch (error) {
    // Two sign-ups raced for the same email: the unique index decided.
    if (isUniqueViolation(error)) return { ok: false, field: 'email', message: 'An account with this email already exists. Sign in instead.' };
    throw error;
  }
}

/** SQLite says "UNIQUE constraint failed"; PostgreSQL's error (wrapped by drizzle) carries code 23505. */
function isUniqueViolation(error: unknown): boolean {
  return String(error).includes('UNIQUE') || (error as { cause?: { code?: unknown } } | null)?.cause?.code === '23505';
}

/** What ending a person's sessions ends with them, besides the browsers' sessions. */
export interface SessionCleanup {
  /** Their personal access tokens and connected apps: no client keeps acting for them. */
  alsoTokensAndApps: boolean;
  /** Their webhooks, subscribed browsers, e-mail choices and preferences: nobody else keeps being told. */
  alsoNotifications: boolean;
}

const sessionsOnly: SessionCleanup = { alsoTokensAndApps: false, alsoNotifications: false };

/**
 * Sets (or replaces) a user's password, ending every session signed in with the old one (and the
 * browsers subscribed in them), and what `cleanup` asks for; used by `npm run user:password`.
 */
export async function setPassword(
  emailInput: string,
  passwordInput: string,
  cleanup: SessionCleanup = sessionsOnly,
): Promise<{ ok: true } | { ok: false; message: string }> {
  const email = emailSchema.safeParse(emailInput);
  if (!email.success) return { ok: false, message: email.error.issues[0].message };
  const password = passwordSchema.safeParse(passwordInput);
  if (!password.success) return { ok: false, message: `Password: ${password.error.issues[0].message}` };
  const user = await getUserByEmail(email.data);
  if (!user) return { ok: false, message: `No user with email ${email.data}. Create one with token:create or sign up.` };
  const passwordHash = await hashPassword(password.data);
  await inTransaction(function* (q) {
    yield* setUserPasswordHash.program(q, user.id, passwordHash);
    yield* endWithSessions(q, user.id, cleanup);
  });
  return { ok: true };
}

/**
 * "Sign out everywhere": every session of the user, on every browser, ends at its next request, and the
 * browsers subscribed in those sessions are no longer told. What `cleanup` asks for ends too.
 */
export async function endAllSessions(userId: string, cleanup: SessionCleanup = sessionsOnly): Promise<void> {
  await inTransaction(function* (q) {
    yield* incrementUserSessionGeneration.program(q, userId);
    yield* endWithSessions(q, userId, cleanup);
  });
}

/** Run after the session generation rose: the browsers subscribed before go, and what `cleanup` asks for. */
function* endWithSessions(q: QueryContext, userId: string, cleanup: SessionCleanup): Program<void> {
  yield* deletePushTargetsOfEndedSessions.program(q, userId);
  if (cleanup.alsoTokensAndApps) yield* endTokensAndApps(q, userId);
  if (cleanup.alsoNotifications) yield* deleteNotificationSetupByUserId.program(q, userId);
}

/** Every personal access token and connected app of the user: no client keeps acting for them. */
function* endTokensAndApps(q: QueryContext, userId: string): Program<void> {
  yield* revokeAccessTokensByUserId.program(q, userId);
  yield* deleteOAuthGrantsByUserId.program(q, userId);
}

/**
 * Joins a provider account to the user whose email the provider vouches for, which proves the address.
 * A password on that account was chosen by whoever signed up with the email, and sign-up never proved
 * the email was theirs: it may be someone who got there before the owner. So the password goes, and
 * with it everything it could have set up: every session, personal access token and connected app, and
 * every webhook, subscribed browser and e-mail choice (each would tell that someone of the owner's
 * tasks). The owner signs in with the provider, and the dashboard says what was removed.
 */
export const linkAccountByProvenEmail = defineQuery(
  function* (q, user: User, account: { provider: string; providerAccountId: string }): Program<void> {
    yield* insertLinkedAccount.program(q, { provider: account.provider, providerAccountId: account.providerAccountId, userId: user.id });
    yield* setUserEmailVerified.program(q, user.id, user.email);
    if (user.passwordHash === null) return;
    yield* removeUserPassword.program(q, user.id);
    yield* endWithSessions(q, user.id, { alsoTokensAndApps: true, alsoNotifications: true });
    yield* setUserReclaimed.program(q, user.id, Date.now());
  },
  { transaction: 'immediate' },
);
