import { timingSafeEqual } from 'node:crypto';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import {
  consumeOAuthRecord,
  deleteOAuthRecord,
  deleteOAuthRecordsOfModelAndGrant,
  findOAuthRecord,
  findOAuthRecordByUid,
  revokeOAuthGrant,
  upsertOAuthRecord,
} from '@/db/queries/oauth';
import { sha256Hex } from '../sha256';

/** Rows are found by a hash of the provider's id: for codes and tokens that id is the secret itself. */
export function hashOAuthId(id: string): string {
  return sha256Hex(id);
}

const clientSecretHashPrefix = 'sha256:';

/** What is stored of a client secret: it is compared (see clientSecretMatches), never read back. */
export function hashClientSecret(secret: string): string {
  return secret.startsWith(clientSecretHashPrefix) ? secret : clientSecretHashPrefix + hashOAuthId(secret);
}

export function clientSecretMatches(storedHash: string | undefined, presented: string): boolean {
  if (!storedHash) return false;
  const expected = Buffer.from(storedHash);
  const actual = Buffer.from(clientSecretHashPrefix + hashOAuthId(presented));
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

export interface SqliteAdapterOptions {
  /** The error a request gets when the code or refresh token it read was used by another meanwhile. */
  reuseError: () => Error;
  /**
   * How long a client that registered itself is kept while no person has allowed it (see
   * markOAuthClientUsed): registration is open to anyone, so unused clients must not pile up.
   */
  unusedClientTtlSeconds: number;
}

/**
 * oidc-provider's storage interface over the database (SQLite or PostgreSQL). The id (`jti`) is never
 * stored: `find` is always called with it, so it is put back on the way out. A client's secret is kept
 * as a hash.
 */
export class SqliteAdapter implements Adapter {
  constructor(
    private readonly model: string,
    private readonly options: SqliteAdapterOptions,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const { jti: _secret, ...stored } = payload;
    if (this.model === 'Client' && typeof stored.client_secret === 'string') stored.client_secret = hashClientSecret(stored.client_secret);
    const lifetimeSeconds = this.model === 'Client' ? this.options.unusedClientTtlSeconds : expiresIn;
    await upsertOAuthRecord({
      model: this.model,
      idHash: hashOAuthId(id),
      payload: stored,
      grantId: typeof payload.grantId === 'string' ? payload.grantId : null,
      uid: typeof payload.uid === 'string' ? payload.uid : null,
      expiresAt: lifetimeSeconds ? Date.now() + lifetimeSeconds * 1000 : null,
    });
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const record = await findOAuthRecord(this.model, hashOAuthId(id));
    return record ? this.toPayload(record, id) : undefined;
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    const record = await findOAuthRecordByUid(this.model, uid);
    if (!record) return undefined;
    // Sessions are the only model found by uid; their jti lives only in the browser's cookie.
    return { ...(record.payload as AdapterPayload), ...(record.consumedAt ? { consumed: Math.floor(record.consumedAt / 1000) } : {}) };
  }

  async findByUserCode(): Promise<AdapterPayload | undefined> {
    return undefined;
  }

  /**
   * The library reads a code or refresh token, checks it is unused, then consumes it; two requests
   * (on two instances, say) can both pass the check. The database decides: the loser is a reuse,
   * which ends the whole grant, as the library does for a reuse it sees itself.
   */
  async consume(id: string): Promise<void> {
    const idHash = hashOAuthId(id);
    if (await consumeOAuthRecord(this.model, idHash, Date.now())) return;
    const grantId = (await findOAuthRecord(this.model, idHash, 0))?.grantId;
    if (grantId) await revokeOAuthGrant(grantId, hashOAuthId(grantId));
    throw this.options.reuseError();
  }

  async destroy(id: string): Promise<void> {
    await deleteOAuthRecord(this.model, hashOAuthId(id));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await deleteOAuthRecordsOfModelAndGrant(this.model, grantId);
  }

  private toPayload(record: { payload: Record<string, unknown>; consumedAt: number | null }, id: string): AdapterPayload {
    const payload = { ...(record.payload as AdapterPayload) };
    if (this.model !== 'Client') payload.jti = id;
    if (record.consumedAt) payload.consumed = Math.floor(record.consumedAt / 1000);
    return payload;
  }
}
