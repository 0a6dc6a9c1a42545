import { and, eq, sql } from 'drizzle-orm';
import { getDb } from '../client';
import { linkedAccounts, users } from '../schema';

export type User = typeof users.$inferSelect;
export type LinkedAccount = typeof linkedAccounts.$inferSelect;

export function getUserByEmail(email: string): User | undefined {
  return getDb().select().from(users).where(eq(users.email, email.toLowerCase())).get();
}

export function getUserById(id: string): User | undefined {
  return getDb().select().from(users).where(eq(users.id, id)).get();
}

export function createUser(input: { email: string; name?: string | null; passwordHash?: string | null }): User {
  return getDb()
    .insert(users)
    .values({
      id: crypto.randomUUID(),
      email: input.email.toLowerCase(),
      name: input.name ?? null,
      passwordHash: input.passwordHash ?? null,
      createdAt: Date.now(),
    })
    .returning()
    .all()[0];
}

/** A new password ends every session signed in before it. */
export function setUserPasswordHash(id: string, passwordHash: string): void {
  getDb()
    .update(users)
    .set({ passwordHash, sessionGeneration: sql`${users.sessionGeneration} + 1` })
    .where(eq(users.id, id))
    .run();
}

/** Removes the user's password, ending every session signed in with it. */
export function removeUserPassword(id: string): void {
  getDb()
    .update(users)
    .set({ passwordHash: null, sessionGeneration: sql`${users.sessionGeneration} + 1` })
    .where(eq(users.id, id))
    .run();
}

/**
 * Replaces a hash with a stronger one of the same password, keeping sessions; only when the stored hash
 * is still the one that was checked, so a password changed meanwhile is never overwritten.
 */
export function upgradeUserPasswordHash(id: string, checkedHash: string, strongerHash: string): void {
  getDb()
    .update(users)
    .set({ passwordHash: strongerHash })
    .where(and(eq(users.id, id), eq(users.passwordHash, checkedHash)))
    .run();
}

/** Ends every session of the user: tokens carrying an older generation are refused from now on. */
export function incrementUserSessionGeneration(id: string): void {
  getDb()
    .update(users)
    .set({ sessionGeneration: sql`${users.sessionGeneration} + 1` })
    .where(eq(users.id, id))
    .run();
}

export function getLinkedAccountByProviderAccountId(provider: string, providerAccountId: string): LinkedAccount | undefined {
  return getDb()
    .select()
    .from(linkedAccounts)
    .where(and(eq(linkedAccounts.provider, provider), eq(linkedAccounts.providerAccountId, providerAccountId)))
    .get();
}

/** Joins a provider account to a user; a second link of the same provider account is refused by the unique index. */
export function insertLinkedAccount(input: { provider: string; providerAccountId: string; userId: string }): LinkedAccount {
  return getDb()
    .insert(linkedAccounts)
    .values({ ...input, createdAt: Date.now() })
    .returning()
    .all()[0];
}

/** Creates a user and joins a provider account to it in one transaction, so neither exists without the other. */
export function createUserWithLinkedAccount(input: {
  email: string;
  name?: string | null;
  provider: string;
  providerAccountId: string;
}): User {
  const db = getDb();
  return db.transaction(() => {
    const user = createUser({ email: input.email, name: input.name });
    db.insert(linkedAccounts)
      .values({ provider: input.provider, providerAccountId: input.providerAccountId, userId: user.id, createdAt: Date.now() })
      .run();
    return user;
  });
}
