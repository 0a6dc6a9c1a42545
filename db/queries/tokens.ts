import { and, desc, eq, isNull } from 'drizzle-orm';
import { getDb } from '../client';
import { accessTokens, users } from '../schema';

export type AccessToken = typeof accessTokens.$inferSelect;

export function insertAccessToken(input: {
  userId: string;
  name: string;
  tokenHash: string;
  lastFour: string;
  expiresAt: number | null;
}): AccessToken {
  return getDb()
    .insert(accessTokens)
    .values({ id: crypto.randomUUID(), createdAt: Date.now(), ...input })
    .returning()
    .all()[0];
}

export function getAccessTokenByHash(tokenHash: string) {
  return getDb()
    .select({ token: accessTokens, user: { id: users.id, email: users.email, name: users.name } })
    .from(accessTokens)
    .innerJoin(users, eq(users.id, accessTokens.userId))
    .where(eq(accessTokens.tokenHash, tokenHash))
    .get();
}

export function getAccessTokenById(id: string): AccessToken | undefined {
  return getDb().select().from(accessTokens).where(eq(accessTokens.id, id)).get();
}

export function markAccessTokenUsed(id: string, at: number): void {
  getDb().update(accessTokens).set({ lastUsedAt: at }).where(eq(accessTokens.id, id)).run();
}

export function listAccessTokensByUserId(userId: string): AccessToken[] {
  return getDb()
    .select()
    .from(accessTokens)
    .where(eq(accessTokens.userId, userId))
    .orderBy(desc(accessTokens.createdAt))
    .all();
}

/** Revokes a token of this user; returns false when there is no such unrevoked token. */
export function revokeAccessTokenById(id: string, userId: string): boolean {
  const result = getDb()
    .update(accessTokens)
    .set({ revokedAt: Date.now() })
    .where(and(eq(accessTokens.id, id), eq(accessTokens.userId, userId), isNull(accessTokens.revokedAt)))
    .run();
  return result.changes > 0;
}

export function revokeAccessTokenByHash(tokenHash: string): boolean {
  const result = getDb()
    .update(accessTokens)
    .set({ revokedAt: Date.now() })
    .where(and(eq(accessTokens.tokenHash, tokenHash), isNull(accessTokens.revokedAt)))
    .run();
  return result.changes > 0;
}
