import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import { rowCache } from '../cache';
import { getDb, preparedQuery } from '../client';
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

const selectTokenByHash = preparedQuery((db) =>
  db
    .select({ token: accessTokens, user: { id: users.id, email: users.email, name: users.name } })
    .from(accessTokens)
    .innerJoin(users, eq(users.id, accessTokens.userId))
    .where(eq(accessTokens.tokenHash, sql.placeholder('tokenHash')))
    .prepare(),
);
const selectTokenById = preparedQuery((db) => db.select().from(accessTokens).where(eq(accessTokens.id, sql.placeholder('id'))).prepare());

type TokenWithUser = NonNullable<ReturnType<ReturnType<typeof selectTokenByHash>['get']>>;
/** Every request looks its token up by hash; see RowCache for how stale an entry may be. */
const tokensByHash = rowCache<string, TokenWithUser>('access-tokens-by-hash', 10_000, 5_000);

export function getAccessTokenByHash(tokenHash: string): TokenWithUser | undefined {
  return tokensByHash.get(tokenHash, () => selectTokenByHash().get({ tokenHash }));
}

export function getAccessTokenById(id: string): AccessToken | undefined {
  return selectTokenById().get({ id });
}

export function markAccessTokenUsed(id: string, tokenHash: string, at: number): void {
  getDb().update(accessTokens).set({ lastUsedAt: at }).where(eq(accessTokens.id, id)).run();
  tokensByHash.update(tokenHash, (found) => ({ ...found, token: { ...found.token, lastUsedAt: at } }));
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
  tokensByHash.clear();
  return result.changes > 0;
}

export function revokeAccessTokenByHash(tokenHash: string): boolean {
  const result = getDb()
    .update(accessTokens)
    .set({ revokedAt: Date.now() })
    .where(and(eq(accessTokens.tokenHash, tokenHash), isNull(accessTokens.revokedAt)))
    .run();
  tokensByHash.delete(tokenHash);
  return result.changes > 0;
}

/** Revokes every unrevoked personal access token of the user; returns how many. */
export function revokeAccessTokensByUserId(userId: string): number {
  const result = getDb()
    .update(accessTokens)
    .set({ revokedAt: Date.now() })
    .where(and(eq(accessTokens.userId, userId), isNull(accessTokens.revokedAt)))
    .run();
  tokensByHash.clear();
  return result.changes;
}
