import type { Client } from 'oidc-provider';
import {
  getConsent,
  getConsentById,
  listConsentsByUserId,
  markOAuthClientUsed,
  revokeOAuthGrant,
  revokeOAuthGrantsOfUserAndClient,
  upsertConsent,
  type OAuthConsent,
} from '@/db/queries/oauth';
import { inTransaction } from '@/db/run';
import type { ClientRegistration } from '@/db/schema';
import { hashOAuthId } from './adapter';
import { clientRegistration } from './client-registration';
import { scopeDescriptions } from './metadata';
import { getOAuthProvider, type OAuthProvider } from './provider';

type InteractionDetails = Awaited<ReturnType<OAuthProvider['interactionDetails']>>;

function hostOf(uri: unknown): string | null {
  try {
    return typeof uri === 'string' ? new URL(uri).host : null;
  } catch {
    return null;
  }
}

export interface ConsentRequest {
  clientName: string;
  clientId: string;
  registration: ClientRegistration;
  redirectHost: string | null;
  /**
   * For a metadata document: the host of its client_id, when the person would be sent back elsewhere.
   * Serving a document at a URL proves control of that URL only, not that the name in it is true.
   */
  redirectElsewhereThan: string | null;
  abilities: string[];
  /** True when the person allowed this client before and it now asks for more. */
  wantsMore: boolean;
}

/** What the consent page shows: only the person the authorization step belongs to may see it. */
export async function describeConsentRequest(uid: string, userId: string): Promise<ConsentRequest | null> {
  const provider = await getOAuthProvider();
  const interaction = await provider.Interaction.find(uid);
  if (!interaction || interaction.prompt.name !== 'consent' || interaction.session?.accountId !== userId) return null;
  const clientId = String(interaction.params.client_id);
  const client = await provider.Client.find(clientId).catch(() => undefined);
  if (!client) return null;
  const registration = await clientRegistration(clientId);
  const requested = String(interaction.params.scope ?? '').split(' ').filter((scope) => scope in scopeDescriptions);
  const redirectHost = hostOf(interaction.params.redirect_uri);
  const clientHost = hostOf(clientId);
  return {
    clientName: client.clientName ?? clientId,
    clientId,
    registration,
    redirectHost,
    redirectElsewhereThan: registration === 'metadata_document' && redirectHost !== clientHost ? clientHost : null,
    abilities: requested.length > 0 ? requested.map((scope) => scopeDescriptions[scope]) : ['Connect to your account (it will have to ask again to start tasks)'],
    wantsMore: Boolean(await getConsent(userId, clientId)),
  };
}

/**
 * Records the person's Allow: extends their grant for this client with what it asked, creating one
 * only when they have none. The grant is the one the consent names now, not the one this step began
 * with: two steps allowed in two tabs then share one grant, which Disconnect ends.
 */
export async function allowConsent(
  provider: OAuthProvider,
  input: { userId: string; client: Client; registration: ClientRegistration; details: InteractionDetails },
): Promise<string> {
  const { userId, client, registration, details } = input;
  const missing = details.prompt.details as {
    missingOIDCScope?: string[];
    missingOIDCClaims?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  const existingId = (await getConsent(userId, client.clientId))?.grantId ?? details.grantId;
  const existing = existingId ? await provider.Grant.find(existingId) : undefined;
  const grant =
    existing && existing.accountId === userId && existing.clientId === client.clientId
      ? existing
      : new provider.Grant({ accountId: userId, clientId: client.clientId });
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  const resourceScopes = Object.keys(missing.missingResourceScopes ?? {}).map((indicator) => grant.getResourceScope(indicator));
  const scope = [...new Set([grant.getOIDCScope(), ...resourceScopes].join(' ').split(' ').filter(Boolean))].join(' ');
  const consent = {
    userId,
    clientId: client.clientId,
    clientName: client.clientName ?? null,
    registration,
    redirectHost: hostOf(details.params.redirect_uri),
    grantId,
    scope,
    allowedAt: Date.now(),
  };
  await inTransaction(function* (q) {
    const { replacedGrantId } = yield* upsertConsent.program(q, consent);
    // Another step's Allow made a grant meanwhile: only one may stay, and nothing may outlive the consent.
    if (replacedGrantId) yield* revokeOAuthGrant.program(q, replacedGrantId, hashOAuthId(replacedGrantId));
    yield* markOAuthClientUsed.program(q, hashOAuthId(client.clientId));
  });
  return grantId;
}

export type ConnectedApp = OAuthConsent;

export function listConnectedApps(userId: string): Promise<ConnectedApp[]> {
  return listConsentsByUserId(userId);
}

/**
 * Disconnect: every grant of this person and client, with its codes, access and refresh tokens, goes
 * at once (an open /mcp stream notices within seconds, as for a revoked personal token). Resolves with
 * false when it is not this person's.
 */
export async function disconnectApp(consentId: string, userId: string): Promise<boolean> {
  const consent = await getConsentById(consentId, userId);
  if (!consent) return false;
  await revokeOAuthGrantsOfUserAndClient(userId, consent.clientId);
  return true;
}
