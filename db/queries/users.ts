import { and, eq, isNotNull, sql } from 'drizzle-orm';
import { changes, defineQuery, first, type Program } from '../run';
import type { linkedAccounts, users } from '../schema';

export type User = typeof users.$inferSelect;
export type LinkedAccount = typeof linkedAccounts.$inferSelect;

export const getUserByEmail = defineQuery(function* (q, email: string): Program<User | undefined> {
  const { users } = q.t;
  return yield* first(q.db.select().from(users).where(eq(users.email, email.toLowerCase())));
});

export const getUserById = defineQuery(function* (q, id: string): Program<User | undefined> {
  const { users } = q.t;
  return yield* first(q.db.select().from(users).where(eq(users.id, id)));
});

export const createUser = defineQuery(function* (
  q,
  input: { email: string; name?: string | null; passwordHash?: string | null },
): Program<User> {
  const { users } = q.t;
  return (yield* first(
    q.db
      .insert(users)
      .values({
        id: crypto.randomUUID(),
        email: input.email.toLowerCase(),
        name: input.name ?? null,
        passwordHash: input.passwordHash ?? null,
        createdAt: Date.now(),
      })
      .returning(),
  ))!;
});

/** A new password ends every session signed in before it. */
export const setUserPasswordHash = defineQuery(function* (q, id: string, passwordHash: string): Program<void> {
  const { users } = q.t;
  yield* changes(
    q.db
      .update(users)
      .set({ passwordHash, sessionGeneration: sql`${users.sessionGeneration} + 1` })
      .where(eq(users.id, id)),
  );
});

/** Removes the user's password, ending every session signed in with it. */
export const removeUserPassword = defineQuery(function* (q, id: string): Program<void> {
  const { users } = q.t;
  yield* changes(
    q.db
      .update(users)
      .set({ passwordHash: null, sessionGeneration: sql`${users.sessionGeneration} + 1` })
      .where(eq(users.id, id)),
  );
});

/**
 * Replaces a hash with a stronger one of the same password, keeping sessions; only when the stored hash
 * is still the one that was checked, so a password changed meanwhile is never overwritten.
 */
export const upgradeUserPasswordHash = defineQuery(function* (q, id: string, checkedHash: string, strongerHash: string): Program<void> {
  const { users } = q.t;
  yield* changes(
    q.db
      .update(users)
      .set({ passwordHash: strongerHash })
      .where(and(eq(users.id, id), eq(users.passwordHash, checkedHash))),
  );
});

/** Ends every session of the user: tokens carrying an older generation are refused from now on. */
export const incrementUserSessionGeneration = defineQuery(function* (q, id: string): Program<void> {
  const { users } = q.t;
  yield* changes(
    q.db
      .update(users)
      .set({ sessionGeneration: sql`${users.sessionGeneration} + 1` })
      .where(eq(users.id, id)),
  );
});

export const getLinkedAccountByProviderAccountId = defineQuery(function* (
  q,
  provider: string,
  providerAccountId: string,
): Program<LinkedAccount | undefined> {
  const { linkedAccounts } = q.t;
  return yield* first(
    q.db
      .select()
      .from(linkedAccounts)
      .where(and(eq(linkedAccounts.provider, provider), eq(linkedAccounts.providerAccountId, providerAccountId))),
  );
});

/** Joins a provider account to a user; a second link of the same provider account is refused by the unique index. */
export const insertLinkedAccount = defineQuery(function* (
  q,
  input: { provider: string; providerAccountId: string; userId: string },
): Program<LinkedAccount> {
  const { linkedAccounts } = q.t;
  return (yield* first(
    q.db
      .insert(linkedAccounts)
      .values({ ...input, createdAt: Date.now() })
      .returning(),
  ))!;
});

/** Creates a user and joins a provider account to it in one transaction, so neither exists without the other. */
export const createUserWithLinkedAccount = defineQuery(
  function* (
    q,
    input: {
      email: string;
      name?: string | null;
      provider: string;
      providerAccountId: string;
    },
  ): Program<User> {
    const { linkedAccounts } = q.t;
    const user = yield* createUser.program(q, { email: input.email, name: input.name });
    yield* changes(
      q.db
        .insert(linkedAccounts)
        .values({ provider: input.provider, providerAccountId: input.providerAccountId, userId: user.id, createdAt: Date.now() }),
    );
    return user;
  },
  { transaction: 'immediate' },
);

/**
 * Records that the user's address is proved to be theirs (a confirmation link, or a provider vouching),
 * only while it is still the account's address.
 */
export const setUserEmailVerified = defineQuery(function* (q, id: string, email: string): Program<boolean> {
  const { users } = q.t;
  return (yield* changes(q.db.update(users).set({ verifiedEmail: email }).where(and(eq(users.id, id), eq(users.email, email))))) > 0;
});

/** Notes that a provider sign-in took the account back, for the dashboard to say what went with it. */
export const setUserReclaimed = defineQuery(function* (q, id: string, at: number): Program<void> {
  const { users } = q.t;
  yield* changes(q.db.update(users).set({ reclaimedAt: at }).where(eq(users.id, id)));
});

/** The person has read what taking the account back removed. */
export const clearUserReclaimed = defineQuery(function* (q, id: string): Program<boolean> {
  const { users } = q.t;
  return (yield* changes(q.db.update(users).set({ reclaimedAt: null }).where(and(eq(users.id, id), isNotNull(users.reclaimedAt))))) > 0;
});
