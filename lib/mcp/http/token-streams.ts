import { isAccessTokenActive } from '@/lib/auth/tokens';
import type { SseStream } from './sse';

/**
 * Long-lived streams outlive the request that checked their token, so revoking the token must end
 * them too: at once when this process revoked it (the revoking action calls closeStreamsOfRevokedTokens),
 * and otherwise at the next check of every token that has an open stream, once a second. That check
 * reads the token's row, so a revocation by another process (the token CLI, another instance) ends the
 * streams within a second too.
 */
const tokenRecheckMs = 1000;

interface TokenStreams {
  byToken: Map<string, Set<SseStream>>;
  timer?: ReturnType<typeof setInterval>;
  /** A timed check still reading tokens: the next tick skips rather than piles up behind it. */
  checking?: boolean;
}

/** Process-wide, on globalThis: a dashboard action and /mcp may run in different bundles of this module. */
const globalForTokenStreams = globalThis as unknown as { __mcpTaskServerTokenStreams?: TokenStreams };
const registry: TokenStreams = (globalForTokenStreams.__mcpTaskServerTokenStreams ??= { byToken: new Map() });

/** Ends the stream when its token is revoked or expires. */
export function closeWhenTokenRevoked(stream: SseStream, tokenId: string): void {
  if (stream.closed) return;
  let streams = registry.byToken.get(tokenId);
  if (!streams) registry.byToken.set(tokenId, (streams = new Set<SseStream>()));
  streams.add(stream);
  stream.onClose(() => forgetStream(stream, tokenId));
  registry.timer ??= startChecking();
}

/**
 * Ends every open stream whose token is no longer active: called at once by what revokes tokens.
 * Resolves once every token has been checked; never rejects (a token that cannot be read is logged,
 * and checked again within a second).
 */
export async function closeStreamsOfRevokedTokens(): Promise<void> {
  for (const [tokenId, streams] of [...registry.byToken]) {
    try {
      if (!(await isAccessTokenActive(tokenId))) for (const stream of [...streams]) stream.close();
    } catch (error) {
      console.error('Checking whether a token with open streams is still active failed', error);
    }
  }
}

function forgetStream(stream: SseStream, tokenId: string): void {
  const streams = registry.byToken.get(tokenId);
  streams?.delete(stream);
  if (streams?.size === 0) registry.byToken.delete(tokenId);
  if (registry.byToken.size === 0 && registry.timer) {
    clearInterval(registry.timer);
    registry.timer = undefined;
  }
}

function startChecking(): ReturnType<typeof setInterval> {
  const timer = setInterval(() => {
    if (registry.checking) return;
    registry.checking = true;
    closeStreamsOfRevokedTokens()
      .catch((error: unknown) => console.error('Checking the tokens of open streams failed', error))
      .finally(() => {
        registry.checking = false;
      });
  }, tokenRecheckMs);
  timer.unref?.();
  return timer;
}
