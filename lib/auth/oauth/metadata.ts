/** The one scope: everything a client may do at /mcp (start tasks, see and cancel them, answer their questions). */
export const mcpScope = 'mcp';

/** What the consent page says each scope allows. */
export const scopeDescriptions: Record<string, string> = {
  [mcpScope]: 'Start tasks as you, see and cancel them, and answer the questions they ask',
  offline_access: 'Stay connected without asking you again until you disconnect it',
  openid: 'Know which account you are',
  email: 'See your email address',
  profile: 'See your name',
};

export const oauthRoutes = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  end_session: '/oauth/end-session',
  introspection: '/oauth/introspect',
  userinfo: '/oauth/userinfo',
  code_verification: '/oauth/device',
  device_authorization: '/oauth/device/auth',
  pushed_authorization_request: '/oauth/par',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
} as const;

/** The canonical URL of the MCP endpoint: the audience of every access token (RFC 8707). */
export function mcpResource(appUrl: string): string {
  return `${appUrl}/mcp`;
}

const mcpResourceMetadataPath = '/.well-known/oauth-protected-resource/mcp';

/**
 * RFC 9728 section 3.3: each metadata document names the resource its address is made from. The
 * path-aware one is /mcp's; the root one is the whole server's, which clients that only look at the
 * root may ask tokens for.
 */
export function resourceOfMetadataPath(pathname: string, appUrl: string): string | null {
  if (pathname === mcpResourceMetadataPath) return mcpResource(appUrl);
  if (pathname === '/.well-known/oauth-protected-resource') return appUrl;
  return null;
}

/**
 * The audience of a token asked for `indicator` (RFC 8707), or null for a resource that is not here.
 * /mcp is part of the whole server, so a token for the server (named with or without its trailing
 * slash) is good at /mcp too.
 */
export function audienceOfResource(indicator: string, appUrl: string): string | null {
  if (indicator === mcpResource(appUrl)) return indicator;
  if (indicator === appUrl || indicator === `${appUrl}/`) return appUrl;
  return null;
}

export function resourceMetadataUrl(appUrl: string): string {
  return `${appUrl}${mcpResourceMetadataPath}`;
}

/** RFC 9728 Protected Resource Metadata for one of this server's resources. */
export function protectedResourceMetadata(appUrl: string, resource: string): Record<string, unknown> {
  return {
    resource,
    authorization_servers: [appUrl],
    scopes_supported: [mcpScope],
    bearer_methods_supported: ['header'],
    resource_name: 'MCP Task Server',
    resource_documentation: `${appUrl}/connect`,
  };
}
