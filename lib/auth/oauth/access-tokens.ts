import { findOAuthRecord, markConsentUsed } from '@/db/queries/oauth';
import { getUserById, type User } from '@/db/queries/users';
import { hashOAuthId } from './adapter';
import { audienceOfResource, mcpScope } from './metadata';

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

function liveToken(idHash: string, now: number): StoredAccessToken | null {
  const record = findOAuthRecord('AccessToken', idHash, now);
  if (!record) return null;
  const payload = record.payload as StoredAccessToken;
  if (typeof payload.exp === 'number' && payload.exp * 1000 <= now) return null;
  // A token outlives nothing it came from: no grant (disconnected, or a reused code or refresh token), no token.
  if (!payload.grantId || !findOAuthRecord('Grant', hashOAuthId(payload.grantId), now)) return null;
  return payload;
}

/**
 * An OAuth access token this server issued, read straight from the authorization server's storage
 * (synchronously, like personal tokens): it must be live, for this server's /mcp (RFC 8707 audience)
 * and carry the mcp scope.
 */
export function verifyOAuthAccessToken(token: string, appUrl: string, now = Date.now()): OAuthTokenCheck {
  if (!opaqueTokenPattern.test(token)) return { ok: false, reason: 'malformed' };
  const idHash = hashOAuthId(token);
  const record = findOAuthRecord('AccessToken', idHash, 0);
  if (!record) return { ok: false, reason: 'unknown' };
  const payload = liveToken(idHash, now);
  if (!payload) return { ok: false, reason: 'expired' };
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!audiences.some((audience) => typeof audience === 'string' && audienceOfResource(audience, appUrl) !== null)) {
    return { ok: false, reason: 'wrong_audience' };
  }
  if (!String(payload.scope ?? '').split(' ').includes(mcpScope)) return { ok: false, reason: 'insufficient_scope' };
  const user = payload.accountId ? getUserById(payload.accountId) : undefined;
  if (!user) return { ok: false, reason: 'unknown' };
  const lastWrite = lastUsedWrites.get(payload.grantId!);
  if (lastWrite === undefined || now - lastWrite >= lastUsedResolutionMs) {
    lastUsedWrites.set(payload.grantId!, now);
    if (lastUsedWrites.size > 10_000) lastUsedWrites.delete(lastUsedWrites.keys().next().value!);
    markConsentUsed(payload.grantId!, now);
  }
  return { ok: true, user: { id: user.id, email: user.email, name: user.name }, tokenId: oauthTokenIdPrefix + idHash, clientId: payload.clientId ?? '' };
}

/** For streams opened with an OAuth token: still live (not expired, revoked or disconnected)? */
export function isOAuthAccessTokenActive(tokenId: string, now = Date.now()): boolean {
  return liveToken(tokenId.slice(oauthTokenIdPrefix.length), now) !== null;
}
