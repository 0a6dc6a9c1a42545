import { createHmac } from 'node:crypto';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import { deleteConsentsOfGrant, deleteExpiredOAuthRecords, getConsent } from '@/db/queries/oauth';
import { getUserById } from '@/db/queries/users';
import { clientAddress } from '@/lib/auth/client-address';
import { getServerSecret } from '@/lib/auth/secret';
import { getEnv } from '@/lib/env';
import { clientSecretMatches, SqliteAdapter } from './adapter';
import { newClientId } from './client-id';
import { loadSigningKeys } from './keys';
import { loopbackRedirectAllowed } from './loopback';
import { audienceOfResource, mcpResource, mcpScope, oauthRoutes } from './metadata';
import { renderOAuthErrorPage } from './error-page';
import { RegistrationLimiter } from './registration-limits';
import { signedInUserId } from './signed-in-user';
import { showUnvettedClientErrorsHere } from './unvetted-clients';

export type OAuthProvider = Provider;

const expiredRecordSweepMs = 60 * 60 * 1000;

const globalForProvider = globalThis as unknown as { __mcpTaskServerOAuthProvider?: Promise<Provider> };

/** The process's one authorization server, created on first use (never at build time). */
export function getOAuthProvider(): Promise<Provider> {
  globalForProvider.__mcpTaskServerOAuthProvider ??= createProvider().catch((error: unknown) => {
    globalForProvider.__mcpTaskServerOAuthProvider = undefined;
    throw error;
  });
  return globalForProvider.__mcpTaskServerOAuthProvider;
}

/** Cookie keys derived from the server secret, so they survive restarts with no setup of their own. */
function cookieKeys(): string[] {
  return [createHmac('sha256', getServerSecret()).update('oauth cookies').digest('base64url')];
}

async function createProvider(): Promise<Provider> {
  // oidc-provider is an ES module: imported here, at first use, so that CommonJS callers can load this file.
  const { default: ProviderClass, errors, interactionPolicy } = await import('oidc-provider');
  const env = getEnv();
  const resource = mcpResource(env.APP_URL);
  const privateHosts = new Set(env.oauthMetadataPrivateHosts);
  const registrationLimiter = new RegistrationLimiter(env.OAUTH_REGISTRATIONS_PER_HOUR);

  /**
   * Runs inside the registration route, however its path was spelled (the library's router ignores
   * case and a trailing slash), before the client is made: the size cap and the count per client
   * address (the same address the sign-in throttle uses, which honours TRUST_PROXY).
   */
  const refuseRegistrationOverLimits = async (ctx: KoaContextWithOIDC): Promise<void> => {
    const bodyBytes = ctx.request.length ?? Buffer.byteLength(JSON.stringify(ctx.oidc.body ?? {}));
    const address = clientAddress(new Headers({ 'x-forwarded-for': ctx.get('x-forwarded-for') }));
    const refusal = await registrationLimiter.check(bodyBytes, address);
    if (!refusal) return;
    ctx.set(refusal.headers);
    throw Object.assign(new errors.CustomOIDCProviderError(refusal.error, refusal.description), { status: refusal.status, statusCode: refusal.status });
  };

  const policy = interactionPolicy.base();
  // The person signed in to the dashboard is the one who authorizes: the provider's own session must
  // name the same account, or the sign-in step runs again (and finds the dashboard's session).
  policy.get('login')!.checks.add(
    new interactionPolicy.Check('dashboard_account', 'the dashboard session names another account', async (ctx) => {
      const userId = await signedInUserId(ctx.req);
      return userId !== null && userId === ctx.oidc.session?.accountId
        ? interactionPolicy.Check.NO_NEED_TO_PROMPT
        : interactionPolicy.Check.REQUEST_PROMPT;
    }),
  );

  const configuration: Configuration = {
    adapter: (model: string) =>
      new SqliteAdapter(model, {
        reuseError: () => new errors.InvalidGrant('authorization code or refresh token already used'),
        unusedClientTtlSeconds: env.OAUTH_UNUSED_CLIENT_TTL_SECONDS,
      }),
    clients: [],
    jwks: { keys: loadSigningKeys() as NonNullable<Configuration['jwks']>['keys'] },
    cookies: { keys: cookieKeys() },
    routes: oauthRoutes,
    scopes: ['openid', 'offline_access', mcpScope],
    claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
    async findAccount(_ctx, sub) {
      const user = await getUserById(sub);
      if (!user) return undefined;
      return { accountId: user.id, claims: async () => ({ sub: user.id, email: user.email, name: user.name ?? undefined }) };
    },
    interactions: { url: (_ctx, interaction) => `/oauth/interaction/${interaction.uid}`, policy },
    // Consent is remembered per person and client (see Connected apps), not per browser session.
    async loadExistingGrant(ctx) {
      const accountId = ctx.oidc.session?.accountId;
      const clientId = ctx.oidc.client?.clientId;
      if (!accountId || !clientId) return undefined;
      const grantId = ctx.oidc.result?.consent?.grantId ?? (await getConsent(accountId, clientId))?.grantId;
      if (!grantId) return undefined;
      const grant = await ctx.oidc.provider.Grant.find(grantId);
      return grant && grant.accountId === accountId && grant.clientId === clientId ? grant : undefined;
    },
    pkce: { required: () => true },
    responseTypes: ['code'],
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    allowOmittingSingleRegisteredRedirectUri: false,
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    },
    // Tokens belong to the client, not to the browser that approved it.
    expiresWithSession: async () => false,
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: () => true,
    ttl: {
      AccessToken: env.OAUTH_ACCESS_TOKEN_TTL_SECONDS,
      AuthorizationCode: 60,
      RefreshToken: env.OAUTH_REFRESH_TOKEN_TTL_SECONDS,
      Grant: 365 * 24 * 60 * 60,
      Interaction: 10 * 60,
      Session: 14 * 24 * 60 * 60,
      IdToken: 60 * 60,
    },
    clientBasedCORS: () => true,
    // Cast: the published types (9.12) predate clientIdMetadataDocument, which the library (9.13) has.
    features: {
      devInteractions: { enabled: false },
      registration: {
        enabled: true,
        initialAccessToken: false,
        // Never issued. It is asked for (and awaited) in the registration route before the client is
        // made: the one place there to await the limits, which the shared counter makes asynchronous
        // (idFactory, called just before, must answer synchronously).
        issueRegistrationAccessToken: async (ctx: KoaContextWithOIDC) => {
          await refuseRegistrationOverLimits(ctx);
          return false;
        },
        idFactory: newClientId,
      },
      revocation: { enabled: true },
      introspection: { enabled: false },
      userinfo: { enabled: false },
      // /mcp checks bearer tokens only: no sender-constrained tokens it could not verify.
      dPoP: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo(_ctx, indicator) {
          const audience = audienceOfResource(indicator, env.APP_URL);
          if (!audience) throw new errors.InvalidTarget(`the resources here are ${resource} and ${env.APP_URL}`);
          return {
            scope: mcpScope,
            audience,
            accessTokenTTL: env.OAUTH_ACCESS_TOKEN_TTL_SECONDS,
            accessTokenFormat: 'opaque',
          };
        },
      },
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        // A document names a client by a URL with a path (the draft forbids bare origins).
        allowFetch: async (_ctx: unknown, clientId: string) => new URL(clientId).pathname !== '/',
      },
    } as Configuration['features'],
    // The library refuses private and loopback addresses; a host named in the setting may use them.
    fetch: ((url: URL | string, options: RequestInit & { dispatcher?: unknown }) => {
      const { hostname } = new URL(url);
      if (privateHosts.has(hostname.toLowerCase())) {
        const { dispatcher: _ssrfGuard, ...rest } = options;
        return fetch(url, rest);
      }
      return fetch(url, options as RequestInit);
    }) as Configuration['fetch'],
    renderError: async (ctx, out) => {
      ctx.type = 'html';
      ctx.body = renderOAuthErrorPage({ error: out.error, error_description: out.error_description });
    },
  };

  const provider = new ProviderClass(env.APP_URL, configuration);
  // The forwarded host and protocol it reads are APP_URL's, set by the node handler on every request.
  provider.proxy = true;
  showUnvettedClientErrorsHere(provider);
  const clientPrototype = provider.Client.prototype as {
    redirectUriAllowed(value: string): boolean;
    compareClientSecret(presented: string): boolean;
    redirectUris?: readonly string[];
    clientSecret?: string;
  };
  // Client secrets are stored as hashes (the adapter): compare the hash of what the client presents.
  clientPrototype.compareClientSecret = function compareClientSecret(presented: string) {
    return clientSecretMatches(this.clientSecret, presented);
  };
  const exactRedirectAllowed = clientPrototype.redirectUriAllowed;
  clientPrototype.redirectUriAllowed = function redirectUriAllowed(value: string) {
    return exactRedirectAllowed.call(this, value) || loopbackRedirectAllowed(value, this.redirectUris ?? []);
  };
  // Expired codes, tokens and interactions are never found again; this only reclaims their rows.
  setInterval(() => {
    deleteExpiredOAuthRecords(Date.now()).catch((error: unknown) => console.error('OAuth: could not delete expired records:', error));
  }, expiredRecordSweepMs).unref();
  provider.on('grant.revoked', (_ctx: KoaContextWithOIDC, grantId: string) => {
    deleteConsentsOfGrant(grantId).catch((error: unknown) => console.error(`OAuth: could not delete the consent of revoked grant ${grantId}:`, error));
  });
  provider.on('server_error', (_ctx: KoaContextWithOIDC, error: Error) => console.error('OAuth: server error:', error.message));
  return provider;
}
