import { and, eq } from 'drizzle-orm';
import { changes, defineQuery, first, rows, type Program } from '../run';

/** Stores (or replaces) a person's sealed secret for one upstream server. */
export const putUpstreamCredential = defineQuery(
  function* (q, credential: { userId: string; serverName: string; sealed: string; createdAt: number }): Program<void> {
    const { upstreamCredentials: credentials } = q.t;
    yield* changes(q.db.delete(credentials).where(and(eq(credentials.userId, credential.userId), eq(credentials.serverName, credential.serverName))));
    yield* changes(q.db.insert(credentials).values(credential));
  },
  { transaction: 'immediate' },
);

export const deleteUpstreamCredential = defineQuery(function* (q, userId: string, serverName: string): Program<number> {
  const { upstreamCredentials: credentials } = q.t;
  return yield* changes(q.db.delete(credentials).where(and(eq(credentials.userId, userId), eq(credentials.serverName, serverName))));
});

export const getUpstreamCredential = defineQuery(function* (q, userId: string, serverName: string): Program<{ sealed: string; createdAt: number } | undefined> {
  const { upstreamCredentials: credentials } = q.t;
  return yield* first(
    q.db
      .select({ sealed: credentials.sealed, createdAt: credentials.createdAt })
      .from(credentials)
      .where(and(eq(credentials.userId, userId), eq(credentials.serverName, serverName))),
  );
});

/** The servers a person has given a secret for, with when. */
export const listUpstreamCredentials = defineQuery(function* (q, userId: string): Program<Array<{ serverName: string; createdAt: number }>> {
  const { upstreamCredentials: credentials } = q.t;
  return yield* rows(q.db.select({ serverName: credentials.serverName, createdAt: credentials.createdAt }).from(credentials).where(eq(credentials.userId, userId)));
});
