import { findOAuthRecord, markConsentUsed, type OAuthRecord } from '@/db/queries/oauth';
import { getUserById, type User } from '@/db/queries/users';
import { hashOAuthId } from './adapter';
import { audienceOfResource, mcpScope } from './metadata';
import { unlessStorageTrouble } from '@/lib/storage/persist';

/** Writing last-used on every request would turn each read into a write; once a minute is enough. */
const lastUsedResolutionMs = 60 * 1000;
const lastUsedWrites = new Map<string, number>();

/** oidc-provider's opaque access tokens: 43 base64url characters (256 bits). */
const opaqueTokenPattern = /^[A-Za-z0-9_-]{43}$/;

export const oauthTokenIdPrefix = 'oauth:';

interface StoredAccessToken {
  accountId?: string;
  clientId?: string;
  grantId?: string;
  aud?: string | string[];
  scope?: string;
  exp?: number;
}

export type OAuthTokenCheck =
  | { ok: true; user: Pick<User, 'id' | 'email' | 'name'>; tokenId: string; clientId: string }
  | { ok: false; reason: 'malformed' | 'unknown' | 'expired' | 'wrong_audience' | 'insufficient_scope' };

/** The payload of a stored access token that is still live, or null. */
async function livePayload(record: OAuthRecord | undefined, now: number): Promise<StoredAccessToken | null> {
  if (!record || (record.expiresAt !== null && record.expiresAt <= now)) return null;
  const payload = record.payload as StoredAccessToken;
  if (typeof payload.exp === 'number' && payload.exp * 1000 <= now) return null;
  // A token outlives nothing it came from: no grant (disconnected, or a reused code or refresh token), no token.
  if (!payload.grantId || !(await findOAuthRecord('Grant', hashOAuthId(payload.grantId), now))) return null;
  return payload;
}

/**
 * An OAuth access token this server issued, read straight from the authorization server's storage
 * (like personal tokens, without going through oidc-provider): it must be live, for this server's /mcp
 * (RFC 8707 audience) and carry the mcp scope.
 */
export async function verifyOAuthAccessToken(token: string, appUrl: string, now = Date.now()): Promise<OAuthTokenCheck> {
  if (!opaqueTokenPattern.test(token)) return { ok: false, reason: 'malformed' };
  const idHash = hashOAuthId(token);
  // Read whether expired or not: an expired token is told apart from one never issued.
  const record = await findOAuthRecord('AccessToken', idHash, 0);
  if (!record) return { ok: false, reason: 'unknown' };
  const payload = await livePayload(record, now);
  if (!payload) return { ok: false, reason: 'expired' };
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!audiences.some((audience) => typeof audience === 'string' && audienceOfResource(audience, appUrl) !== null)) {
    return { ok: false, reason: 'wrong_audience' };
  }
  if (!String(payload.scope ?? '').split(' ').includes(mcpScope)) return { ok: false, reason: 'insufficient_scope' };
  const user = payload.accountId ? await getUserById(payload.accountId) : undefined;
  if (!user) return { ok: false, reason: 'unknown' };
  const lastWrite = lastUsedWrites.get(payload.grantId!);
  if (lastWrite === undefined || now - lastWrite >= lastUsedResolutionMs) {
    lastUsedWrites.set(payload.grantId!, now);
    if (lastUsedWrites.size > 10_000) lastUsedWrites.delete(lastUsedWrites.keys().next().value!);
    await unlessStorageTrouble(markConsentUsed(payload.grantId!, now));
  }
  return { ok: true, user: { id: user.id, email: user.email, name: user.name }, tokenId: oauthTokenIdPrefix + idHash, clientId: payload.clientId ?? '' };
}

/** For streams opened with an OAuth token: resolves with whether it is still live (not expired, revoked or disconnected). */
export async function isOAuthAccessTokenActive(tokenId: string, now = Date.now()): Promise<boolean> {
  const idHash = tokenId.slice(oauthTokenIdPrefix.length);
  return (await livePayload(await findOAuthRecord('AccessToken', idHash, now), now)) !== null;
}
