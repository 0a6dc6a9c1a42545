import { and, desc, eq, gt, isNull, lte, ne, or, sql, type SQL } from 'drizzle-orm';
import { changes, defineQuery, first, lock, rows, type Program, type QueryContext } from '../run';
import type { ClientRegistration, oauthConsents, oauthRecords } from '../schema';

export type OAuthRecord = typeof oauthRecords.$inferSelect;
export type OAuthConsent = typeof oauthConsents.$inferSelect;

const live = (q: QueryContext, now: number) => or(isNull(q.t.oauthRecords.expiresAt), gt(q.t.oauthRecords.expiresAt, now));

export const upsertOAuthRecord = defineQuery(function* (
  q,
  input: {
    model: string;
    idHash: string;
    payload: Record<string, unknown>;
    grantId: string | null;
    uid: string | null;
    expiresAt: number | null;
    registeredVia?: string | null;
  },
): Program<void> {
  const { oauthRecords } = q.t;
  const { registeredVia, ...values } = input;
  yield* changes(
    q.db
      .insert(oauthRecords)
      .values({ ...values, registeredVia: registeredVia ?? null })
      .onConflictDoUpdate({
        target: [oauthRecords.model, oauthRecords.idHash],
        set: { payload: values.payload, grantId: values.grantId, uid: values.uid, expiresAt: values.expiresAt },
      }),
  );
});

/** A record that has not expired. */
export const findOAuthRecord = defineQuery(function* (q, model: string, idHash: string, now: number = Date.now()): Program<OAuthRecord | undefined> {
  const { oauthRecords } = q.t;
  return yield* first(
    q.db
      .select()
      .from(oauthRecords)
      .where(and(eq(oauthRecords.model, model), eq(oauthRecords.idHash, idHash), live(q, now))),
  );
});

export const findOAuthRecordByUid = defineQuery(function* (q, model: string, uid: string, now: number = Date.now()): Program<OAuthRecord | undefined> {
  const { oauthRecords } = q.t;
  return yield* first(
    q.db
      .select()
      .from(oauthRecords)
      .where(and(eq(oauthRecords.model, model), eq(oauthRecords.uid, uid), live(q, now))),
  );
});

/**
 * Marks a code or refresh token used, if nobody did first: false when another request (of this or
 * another instance) consumed it since it was read, which is a reuse.
 */
export const consumeOAuthRecord = defineQuery(function* (q, model: string, idHash: string, at: number): Program<boolean> {
  const { oauthRecords } = q.t;
  return (
    (yield* changes(
      q.db
        .update(oauthRecords)
        .set({ consumedAt: at })
        .where(and(eq(oauthRecords.model, model), eq(oauthRecords.idHash, idHash), isNull(oauthRecords.consumedAt))),
    )) === 1
  );
});

export const deleteOAuthRecord = defineQuery(function* (q, model: string, idHash: string): Program<void> {
  const { oauthRecords } = q.t;
  yield* changes(q.db.delete(oauthRecords).where(and(eq(oauthRecords.model, model), eq(oauthRecords.idHash, idHash))));
});

export const deleteOAuthRecordsOfModelAndGrant = defineQuery(function* (q, model: string, grantId: string): Program<void> {
  const { oauthRecords } = q.t;
  yield* changes(q.db.delete(oauthRecords).where(and(eq(oauthRecords.model, model), eq(oauthRecords.grantId, grantId))));
});

/** Deletes a grant's codes and tokens (every model that carries its id), the grant itself and the consent naming it. */
export const revokeOAuthGrant = defineQuery(
  function* (q, grantId: string, grantIdHash: string): Program<void> {
    const { oauthRecords, oauthConsents } = q.t;
    yield* changes(q.db.delete(oauthRecords).where(eq(oauthRecords.grantId, grantId)));
    yield* changes(q.db.delete(oauthRecords).where(and(eq(oauthRecords.model, 'Grant'), eq(oauthRecords.idHash, grantIdHash))));
    yield* changes(q.db.delete(oauthConsents).where(eq(oauthConsents.grantId, grantId)));
  },
  { transaction: 'immediate' },
);

/**
 * One top-level string field of a record's JSON payload. The key is one of two fixed names, written
 * into the SQL as a literal (on PostgreSQL a bare parameter after ->> would be of ambiguous type).
 */
const payloadField = (q: QueryContext, name: 'accountId' | 'clientId'): SQL =>
  q.dialect === 'pg'
    ? sql`(cast(${q.t.oauthRecords.payload} as json) ->> ${sql.raw(`'${name}'`)})`
    : sql`json_extract(${q.t.oauthRecords.payload}, ${`$.${name}`})`;

/**
 * Disconnect: every grant of this person and client, with its codes and tokens (each carries both
 * ids), and the consent. Not only the grant the consent names: two authorizations allowed at the same
 * time may each have made one.
 */
export const revokeOAuthGrantsOfUserAndClient = defineQuery(
  function* (q, userId: string, clientId: string): Program<void> {
    const { oauthRecords, oauthConsents } = q.t;
    yield* changes(
      q.db
        .delete(oauthRecords)
        .where(and(ne(oauthRecords.model, 'Client'), eq(payloadField(q, 'accountId'), userId), eq(payloadField(q, 'clientId'), clientId))),
    );
    yield* changes(q.db.delete(oauthConsents).where(and(eq(oauthConsents.userId, userId), eq(oauthConsents.clientId, clientId))));
  },
  { transaction: 'immediate' },
);

/** A client, and every grant, code and token issued to it, and every consent to it. */
export const deleteOAuthClientAndGrants = defineQuery(
  function* (q, clientId: string, clientIdHash: string): Program<void> {
    const { oauthRecords, oauthConsents } = q.t;
    yield* changes(q.db.delete(oauthRecords).where(and(eq(oauthRecords.model, 'Client'), eq(oauthRecords.idHash, clientIdHash))));
    yield* changes(q.db.delete(oauthRecords).where(eq(payloadField(q, 'clientId'), clientId)));
    yield* changes(q.db.delete(oauthConsents).where(eq(oauthConsents.clientId, clientId)));
  },
  { transaction: 'immediate' },
);

/** A registered client a person has allowed is kept; until then it expires (see the adapter). */
export const markOAuthClientUsed = defineQuery(function* (q, clientIdHash: string): Program<void> {
  const { oauthRecords } = q.t;
  yield* changes(
    q.db
      .update(oauthRecords)
      .set({ expiresAt: null })
      .where(and(eq(oauthRecords.model, 'Client'), eq(oauthRecords.idHash, clientIdHash))),
  );
});

export const deleteExpiredOAuthRecords = defineQuery(function* (q, now: number): Program<number> {
  const { oauthRecords } = q.t;
  return yield* changes(q.db.delete(oauthRecords).where(lte(oauthRecords.expiresAt, now)));
});

export const upsertConsent = defineQuery(
  function* (
    q,
    input: {
      userId: string;
      clientId: string;
      clientName: string | null;
      registration: ClientRegistration;
      redirectHost: string | null;
      grantId: string;
      scope: string;
      allowedAt: number;
    },
  ): Program<{ replacedGrantId: string | null }> {
    const { oauthConsents } = q.t;
    // Two consents to one client at once must each see the other's grant as the one they replace.
    yield* lock(q, `oauth-consent:${input.userId}:${input.clientId}`);
    const previous = yield* first(
      q.db
        .select({ grantId: oauthConsents.grantId })
        .from(oauthConsents)
        .where(and(eq(oauthConsents.userId, input.userId), eq(oauthConsents.clientId, input.clientId))),
    );
    yield* changes(
      q.db
        .insert(oauthConsents)
        .values({ id: crypto.randomUUID(), ...input })
        .onConflictDoUpdate({
          target: [oauthConsents.userId, oauthConsents.clientId],
          set: {
            clientName: input.clientName,
            redirectHost: input.redirectHost,
            grantId: input.grantId,
            scope: input.scope,
            allowedAt: input.allowedAt,
          },
        }),
    );
    return { replacedGrantId: previous && previous.grantId !== input.grantId ? previous.grantId : null };
  },
  { transaction: 'immediate' },
);

export const getConsent = defineQuery(function* (q, userId: string, clientId: string): Program<OAuthConsent | undefined> {
  const { oauthConsents } = q.t;
  return yield* first(
    q.db
      .select()
      .from(oauthConsents)
      .where(and(eq(oauthConsents.userId, userId), eq(oauthConsents.clientId, clientId))),
  );
});

export const getConsentById = defineQuery(function* (q, id: string, userId: string): Program<OAuthConsent | undefined> {
  const { oauthConsents } = q.t;
  return yield* first(
    q.db
      .select()
      .from(oauthConsents)
      .where(and(eq(oauthConsents.id, id), eq(oauthConsents.userId, userId))),
  );
});

export const listConsentsByUserId = defineQuery(function* (q, userId: string): Program<OAuthConsent[]> {
  const { oauthConsents } = q.t;
  return yield* rows(q.db.select().from(oauthConsents).where(eq(oauthConsents.userId, userId)).orderBy(desc(oauthConsents.allowedAt)));
});

export const markConsentUsed = defineQuery(function* (q, grantId: string, at: number): Program<void> {
  const { oauthConsents } = q.t;
  yield* changes(q.db.update(oauthConsents).set({ lastUsedAt: at }).where(eq(oauthConsents.grantId, grantId)));
});

export const deleteConsentsOfGrant = defineQuery(function* (q, grantId: string): Program<void> {
  const { oauthConsents } = q.t;
  yield* changes(q.db.delete(oauthConsents).where(eq(oauthConsents.grantId, grantId)));
});

/**
 * Every grant of one person with its codes and tokens, their authorization-server sessions and their
 * consents (Connected apps): what ends when all their access ends. Each of those records carries the
 * person as `accountId`.
 */
export const deleteOAuthGrantsByUserId = defineQuery(
  function* (q, userId: string): Program<void> {
    const { oauthRecords, oauthConsents } = q.t;
    yield* changes(q.db.delete(oauthRecords).where(and(ne(oauthRecords.model, 'Client'), eq(payloadField(q, 'accountId'), userId))));
    yield* changes(q.db.delete(oauthConsents).where(eq(oauthConsents.userId, userId)));
  },
  { transaction: 'immediate' },
);
