import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import { rowCache } from '../cache';
import { changes, defineQuery, first, preparedQuery, rows, type Program } from '../run';
import type { accessTokens } from '../schema';

export type AccessToken = typeof accessTokens.$inferSelect;

export const insertAccessToken = defineQuery(function* (
  q,
  input: {
    userId: string;
    name: string;
    tokenHash: string;
    lastFour: string;
    expiresAt: number | null;
  },
): Program<AccessToken> {
  const { accessTokens } = q.t;
  return (yield* first(
    q.db
      .insert(accessTokens)
      .values({ id: crypto.randomUUID(), createdAt: Date.now(), ...input })
      .returning(),
  ))!;
});

const selectTokenByHash = preparedQuery((q) =>
  q.db
    .select({ token: q.t.accessTokens, user: { id: q.t.users.id, email: q.t.users.email, name: q.t.users.name } })
    .from(q.t.accessTokens)
    .innerJoin(q.t.users, eq(q.t.users.id, q.t.accessTokens.userId))
    .where(eq(q.t.accessTokens.tokenHash, sql.placeholder('tokenHash'))),
);
const selectTokenById = preparedQuery((q) => q.db.select().from(q.t.accessTokens).where(eq(q.t.accessTokens.id, sql.placeholder('id'))));

type TokenWithUser = { token: AccessToken; user: { id: string; email: string; name: string | null } };
/** Every request looks its token up by hash; see RowCache for how stale an entry may be. */
const tokensByHash = rowCache<string, TokenWithUser>('access-tokens-by-hash', 10_000, 5_000, { access_tokens: 'row', users: 'all' }, (found) => found.token.id);

export const getAccessTokenByHash = defineQuery(
  function* (q, tokenHash: string): Program<TokenWithUser | undefined> {
    const hit = tokensByHash.peek(tokenHash);
    if (hit !== undefined) return hit;
    const stamp = tokensByHash.stamp();
    const row: TokenWithUser | undefined = yield* first(selectTokenByHash(q), { tokenHash });
    tokensByHash.set(tokenHash, row, stamp);
    return row;
  },
  { fromCache: (tokenHash) => tokensByHash.peek(tokenHash) },
);

export const getAccessTokenById = defineQuery(function* (q, id: string): Program<AccessToken | undefined> {
  return yield* first(selectTokenById(q), { id });
});

export const markAccessTokenUsed = defineQuery(function* (q, id: string, tokenHash: string, at: number): Program<void> {
  const { accessTokens } = q.t;
  yield* changes(q.db.update(accessTokens).set({ lastUsedAt: at }).where(eq(accessTokens.id, id)));
  tokensByHash.update(tokenHash, (found) => ({ ...found, token: { ...found.token, lastUsedAt: at } }));
});

export const listAccessTokensByUserId = defineQuery(function* (q, userId: string): Program<AccessToken[]> {
  const { accessTokens } = q.t;
  return yield* rows(
    q.db
      .select()
      .from(accessTokens)
      .where(eq(accessTokens.userId, userId))
      .orderBy(desc(accessTokens.createdAt)),
  );
});

/** Revokes a token of this user; returns false when there is no such unrevoked token. */
export const revokeAccessTokenById = defineQuery(function* (q, id: string, userId: string): Program<boolean> {
  const { accessTokens } = q.t;
  const changed = yield* changes(
    q.db
      .update(accessTokens)
      .set({ revokedAt: Date.now() })
      .where(and(eq(accessTokens.id, id), eq(accessTokens.userId, userId), isNull(accessTokens.revokedAt))),
  );
  tokensByHash.clear();
  return changed > 0;
});

export const revokeAccessTokenByHash = defineQuery(function* (q, tokenHash: string): Program<boolean> {
  const { accessTokens } = q.t;
  const changed = yield* changes(
    q.db
      .update(accessTokens)
      .set({ revokedAt: Date.now() })
      .where(and(eq(accessTokens.tokenHash, tokenHash), isNull(accessTokens.revokedAt))),
  );
  tokensByHash.delete(tokenHash);
  return changed > 0;
});

/** Revokes every unrevoked personal access token of the user; returns how many. */
export const revokeAccessTokensByUserId = defineQuery(function* (q, userId: string): Program<number> {
  const { accessTokens } = q.t;
  const changed = yield* changes(
    q.db
      .update(accessTokens)
      .set({ revokedAt: Date.now() })
      .where(and(eq(accessTokens.userId, userId), isNull(accessTokens.revokedAt))),
  );
  tokensByHash.clear();
  return changed;
});
