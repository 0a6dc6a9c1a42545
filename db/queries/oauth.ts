import { and, desc, eq, gt, isNull, lte, ne, or, sql } from 'drizzle-orm';
import { getDb } from '../client';
import { oauthConsents, oauthRecords, type ClientRegistration } from '../schema';

export type OAuthRecord = typeof oauthRecords.$inferSelect;
export type OAuthConsent = typeof oauthConsents.$inferSelect;

const live = (now: number) => or(isNull(oauthRecords.expiresAt), gt(oauthRecords.expiresAt, now));

export function upsertOAuthRecord(input: {
  model: string;
  idHash: string;
  payload: Record<string, unknown>;
  grantId: string | null;
  uid: string | null;
  expiresAt: number | null;
  registeredVia?: string | null;
}): void {
  const { registeredVia, ...values } = input;
  getDb()
    .insert(oauthRecords)
    .values({ ...values, registeredVia: registeredVia ?? null })
    .onConflictDoUpdate({
      target: [oauthRecords.model, oauthRecords.idHash],
      set: { payload: values.payload, grantId: values.grantId, uid: values.uid, expiresAt: values.expiresAt },
    })
    .run();
}

/** A record that has not expired. */
export function findOAuthRecord(model: string, idHash: string, now = Date.now()): OAuthRecord | undefined {
  return getDb()
    .select()
    .from(oauthRecords)
    .where(and(eq(oauthRecords.model, model), eq(oauthRecords.idHash, idHash), live(now)))
    .get();
}

export function findOAuthRecordByUid(model: string, uid: string, now = Date.now()): OAuthRecord | undefined {
  return getDb()
    .select()
    .from(oauthRecords)
    .where(and(eq(oauthRecords.model, model), eq(oauthRecords.uid, uid), live(now)))
    .get();
}

/**
 * Marks a code or refresh token used, if nobody did first: false when another request (of this or
 * another instance) consumed it since it was read, which is a reuse.
 */
export function consumeOAuthRecord(model: string, idHash: string, at: number): boolean {
  return (
    getDb()
      .update(oauthRecords)
      .set({ consumedAt: at })
      .where(and(eq(oauthRecords.model, model), eq(oauthRecords.idHash, idHash), isNull(oauthRecords.consumedAt)))
      .run().changes === 1
  );
}

export function deleteOAuthRecord(model: string, idHash: string): void {
  getDb()
    .delete(oauthRecords)
    .where(and(eq(oauthRecords.model, model), eq(oauthRecords.idHash, idHash)))
    .run();
}

export function deleteOAuthRecordsOfModelAndGrant(model: string, grantId: string): void {
  getDb()
    .delete(oauthRecords)
    .where(and(eq(oauthRecords.model, model), eq(oauthRecords.grantId, grantId)))
    .run();
}

/** Deletes a grant's codes and tokens (every model that carries its id), the grant itself and the consent naming it. */
export function revokeOAuthGrant(grantId: string, grantIdHash: string): void {
  const db = getDb();
  db.transaction((tx) => {
    tx.delete(oauthRecords).where(eq(oauthRecords.grantId, grantId)).run();
    tx.delete(oauthRecords)
      .where(and(eq(oauthRecords.model, 'Grant'), eq(oauthRecords.idHash, grantIdHash)))
      .run();
    tx.delete(oauthConsents).where(eq(oauthConsents.grantId, grantId)).run();
  });
}

const payloadField = (name: 'accountId' | 'clientId') => sql`json_extract(${oauthRecords.payload}, ${`$.${name}`})`;

/**
 * Disconnect: every grant of this person and client, with its codes and tokens (each carries both
 * ids), and the consent. Not only the grant the consent names: two authorizations allowed at the same
 * time may each have made one.
 */
export function revokeOAuthGrantsOfUserAndClient(userId: string, clientId: string): void {
  getDb().transaction((tx) => {
    tx.delete(oauthRecords)
      .where(and(ne(oauthRecords.model, 'Client'), eq(payloadField('accountId'), userId), eq(payloadField('clientId'), clientId)))
      .run();
    tx.delete(oauthConsents).where(and(eq(oauthConsents.userId, userId), eq(oauthConsents.clientId, clientId))).run();
  });
}

/** A client, and every grant, code and token issued to it, and every consent to it. */
export function deleteOAuthClientAndGrants(clientId: string, clientIdHash: string): void {
  getDb().transaction((tx) => {
    tx.delete(oauthRecords).where(and(eq(oauthRecords.model, 'Client'), eq(oauthRecords.idHash, clientIdHash))).run();
    tx.delete(oauthRecords).where(eq(payloadField('clientId'), clientId)).run();
    tx.delete(oauthConsents).where(eq(oauthConsents.clientId, clientId)).run();
  });
}

/** A registered client a person has allowed is kept; until then it expires (see the adapter). */
export function markOAuthClientUsed(clientIdHash: string): void {
  getDb()
    .update(oauthRecords)
    .set({ expiresAt: null })
    .where(and(eq(oauthRecords.model, 'Client'), eq(oauthRecords.idHash, clientIdHash)))
    .run();
}

export function deleteExpiredOAuthRecords(now: number): number {
  return getDb().delete(oauthRecords).where(lte(oauthRecords.expiresAt, now)).run().changes;
}

export function upsertConsent(input: {
  userId: string;
  clientId: string;
  clientName: string | null;
  registration: ClientRegistration;
  redirectHost: string | null;
  grantId: string;
  scope: string;
  allowedAt: number;
}): { replacedGrantId: string | null } {
  return getDb().transaction((tx) => {
    const previous = tx
      .select({ grantId: oauthConsents.grantId })
      .from(oauthConsents)
      .where(and(eq(oauthConsents.userId, input.userId), eq(oauthConsents.clientId, input.clientId)))
      .get();
    tx.insert(oauthConsents)
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
      })
      .run();
    return { replacedGrantId: previous && previous.grantId !== input.grantId ? previous.grantId : null };
  });
}

export function getConsent(userId: string, clientId: string): OAuthConsent | undefined {
  return getDb()
    .select()
    .from(oauthConsents)
    .where(and(eq(oauthConsents.userId, userId), eq(oauthConsents.clientId, clientId)))
    .get();
}

export function getConsentById(id: string, userId: string): OAuthConsent | undefined {
  return getDb()
    .select()
    .from(oauthConsents)
    .where(and(eq(oauthConsents.id, id), eq(oauthConsents.userId, userId)))
    .get();
}

export function listConsentsByUserId(userId: string): OAuthConsent[] {
  return getDb()
    .select()
    .from(oauthConsents)
    .where(eq(oauthConsents.userId, userId))
    .orderBy(desc(oauthConsents.allowedAt))
    .all();
}

export function markConsentUsed(grantId: string, at: number): void {
  getDb().update(oauthConsents).set({ lastUsedAt: at }).where(eq(oauthConsents.grantId, grantId)).run();
}

export function deleteConsentsOfGrant(grantId: string): void {
  getDb().delete(oauthConsents).where(eq(oauthConsents.grantId, grantId)).run();
}

/**
 * Every grant of one person with its codes and tokens, their authorization-server sessions and their
 * consents (Connected apps): what ends when all their access ends. Each of those records carries the
 * person as `accountId`.
 */
export function deleteOAuthGrantsByUserId(userId: string): void {
  getDb().transaction((tx) => {
    tx.delete(oauthRecords).where(and(ne(oauthRecords.model, 'Client'), eq(payloadField('accountId'), userId))).run();
    tx.delete(oauthConsents).where(eq(oauthConsents.userId, userId)).run();
  });
}
