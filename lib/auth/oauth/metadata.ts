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

export const protectedResourcePaths = ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'];

/** The canonical URL of the MCP endpoint: the audience of every access token (RFC 8707). */
export function mcpResource(appUrl: string): string {
  return `${appUrl}/mcp`;
}

export function resourceMetadataUrl(appUrl: string): string {
  return `${appUrl}${protectedResourcePaths[0]}`;
}

/** RFC 9728 Protected Resource Metadata for /mcp. */
export function protectedResourceMetadata(appUrl: string): Record<string, unknown> {
  return {
    resource: mcpResource(appUrl),
    authorization_servers: [appUrl],
    scopes_supported: [mcpScope],
    bearer_methods_supported: ['header'],
    resource_name: 'MCP Task Server',
    resource_documentation: `${appUrl}/connect`,
  };
}
