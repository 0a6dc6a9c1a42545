import { randomBytes } from 'node:crypto';
import {
  getAccessTokenByHash,
  getAccessTokenById,
  insertAccessToken,
  listAccessTokensByUserId,
  markAccessTokenUsed,
  revokeAccessTokenByHash,
  revokeAccessTokenById,
  type AccessToken,
} from '@/db/queries/tokens';
import { isOAuthAccessTokenActive, oauthTokenIdPrefix, verifyOAuthAccessToken } from './oauth/access-tokens';
import { unlessStorageTrouble } from '@/lib/storage/persist';
import { sha256Hex } from './sha256';

export const tokenPrefix = 'mcp_pat_';
/** 32 random bytes (256 bits), base64url: 43 characters after the prefix. */
const tokenPattern = /^mcp_pat_[A-Za-z0-9_-]{43}$/;
/** Writing last-used on every request would turn each read into a write; once a minute is enough. */
const lastUsedResolutionMs = 60 * 1000;

export function hashToken(token: string): string {
  return sha256Hex(token);
}

/** Creates a personal access token; the clear token is given once and never stored. */
export async function issueAccessToken(input: { userId: string; name: string; expiresAt?: number | null }): Promise<{
  token: string;
  record: AccessToken;
}> {
  const token = tokenPrefix + randomBytes(32).toString('base64url');
  const record = await insertAccessToken({
    userId: input.userId,
    name: input.name,
    tokenHash: hashToken(token),
    lastFour: token.slice(-4),
    expiresAt: input.expiresAt ?? null,
  });
  return { token, record };
}

export type TokenCheck =
  | { ok: true; user: { id: string; email: string; name: string | null }; tokenId: string }
  | { ok: false; reason: 'missing' | 'malformed' | 'unknown' | 'revoked' | 'expired' | 'wrong_audience' | 'insufficient_scope' };

/**
 * Reads `Authorization: Bearer <token>` and resolves with who it belongs to, or why it is refused: a
 * personal access token (`mcp_pat_…`), or an OAuth access token this server issued for `appUrl`'s /mcp.
 */
export async function verifyBearer(authorization: string | null, appUrl: string): Promise<TokenCheck> {
  // Another scheme (Basic, Digest…) carries no bearer token: the same as none at all (RFC 6750 section 3.1).
  if (!authorization || !/^Bearer(\s|$)/i.test(authorization)) return { ok: false, reason: 'missing' };
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) return { ok: false, reason: 'malformed' };
  if (!match[1].startsWith(tokenPrefix)) return verifyOAuthAccessToken(match[1], appUrl);
  if (!tokenPattern.test(match[1])) return { ok: false, reason: 'malformed' };
  const tokenHash = hashToken(match[1]);
  const found = await getAccessTokenByHash(tokenHash);
  if (!found) return { ok: false, reason: 'unknown' };
  const now = Date.now();
  if (found.token.revokedAt !== null) return { ok: false, reason: 'revoked' };
  if (found.token.expiresAt !== null && found.token.expiresAt <= now) return { ok: false, reason: 'expired' };
  if (found.token.lastUsedAt === null || now - found.token.lastUsedAt >= lastUsedResolutionMs) {
    await unlessStorageTrouble(markAccessTokenUsed(found.token.id, tokenHash, now));
  }
  return { ok: true, user: found.user, tokenId: found.token.id };
}

/** Resolves with whether a token can still be used: for streams that outlive the request that opened them. */
export async function isAccessTokenActive(tokenId: string): Promise<boolean> {
  if (tokenId.startsWith(oauthTokenIdPrefix)) return isOAuthAccessTokenActive(tokenId);
  const token = await getAccessTokenById(tokenId);
  return Boolean(token && token.revokedAt === null && (token.expiresAt === null || token.expiresAt > Date.now()));
}

export function listAccessTokens(userId: string): Promise<AccessToken[]> {
  return listAccessTokensByUserId(userId);
}

/** Revokes one of the user's tokens; resolves with false when it is not theirs or already revoked. */
export function revokeAccessToken(tokenId: string, userId: string): Promise<boolean> {
  return revokeAccessTokenById(tokenId, userId);
}

/** Revokes a token given in clear; resolves with false when it is unknown or already revoked. */
export function revokeClearToken(token: string): Promise<boolean> {
  return revokeAccessTokenByHash(hashToken(token.trim()));
}
