import { createHash, randomBytes } from 'node:crypto';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/**
 * The official SDK's OAuth client interface, kept in memory: what a desktop MCP client stores between
 * runs. `redirectToAuthorization` only records the URL; the test opens it in Chromium.
 */
export class MemoryOAuthClient implements OAuthClientProvider {
  authorizationUrl?: URL;
  storedTokens?: OAuthTokens;
  information?: OAuthClientInformationMixed;
  private verifier?: string;

  constructor(
    readonly redirectUrl: string,
    private readonly metadata: Partial<OAuthClientMetadata> = {},
    readonly clientMetadataUrl?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return { ...publicClientMetadata('SDK test client', this.redirectUrl), ...this.metadata };
  }

  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.storedTokens;
  }
  saveTokens(tokens: OAuthTokens) {
    this.storedTokens = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error('no code verifier saved');
    return this.verifier;
  }
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** What a public client (a native or browser app: no secret, PKCE) registers or publishes. */
export function publicClientMetadata(clientName: string, redirectUri: string) {
  return {
    client_name: clientName,
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

export async function registerClient(baseUrl: string, metadata: Record<string, unknown>): Promise<Response> {
  return fetch(`${baseUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(metadata),
  });
}

export async function tokenRequest(baseUrl: string, params: Record<string, string>, headers: Record<string, string> = {}) {
  const response = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any>, challenge: response.headers.get('www-authenticate') };
}

/**
 * A browser stand-in for the authorization step, over raw HTTP with a cookie jar: signs in through
 * NextAuth's credentials endpoint, follows the authorization server's redirects, and presses
 * Allow (or Deny) on the consent form exactly as the page posts it.
 */
export class BrowserSession {
  private readonly cookies = new Map<string, string>();

  constructor(private readonly baseUrl: string) {}

  private cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  private remember(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator).trim();
      const value = pair.slice(separator + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const response = await fetch(new URL(url, this.baseUrl), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: this.cookieHeader() },
    });
    this.remember(response);
    return response;
  }

  async signIn(email: string, password: string): Promise<void> {
    const csrf = (await (await this.request('/api/auth/csrf')).json()) as { csrfToken: string };
    const response = await this.request('/api/auth/callback/credentials', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrfToken: csrf.csrfToken, email, password, json: 'true' }),
    });
    if (![200, 302].includes(response.status) || ![...this.cookies.keys()].some((name) => name.endsWith('next-auth.session-token'))) {
      throw new Error(`sign-in failed with ${response.status}`);
    }
  }

  /**
   * Follows redirects within the server until one leaves it (the client's redirect URI) or a page
   * is shown; returns that last response and its URL.
   */
  async follow(url: string, maxHops = 10): Promise<{ response: Response; url: URL }> {
    let current = new URL(url, this.baseUrl);
    for (let hop = 0; hop < maxHops; hop += 1) {
      const response = await this.request(current.toString());
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) return { response, url: current };
      current = new URL(location, current);
      if (current.origin !== new URL(this.baseUrl).origin) return { response, url: current };
    }
    throw new Error('too many redirects');
  }

  /** Opens an authorization URL and answers the consent page; returns where the browser ends up. */
  async authorize(authorizationUrl: string, decision: 'allow' | 'deny' = 'allow'): Promise<URL> {
    const first = await this.follow(authorizationUrl);
    if (first.url.origin !== new URL(this.baseUrl).origin) return first.url;
    const consent = /^\/consent\/([^/]+)$/.exec(first.url.pathname);
    if (!consent) throw new Error(`expected the consent page, got ${first.url} (${first.response.status})`);
    const posted = await this.request(`/oauth/interaction/${consent[1]}/confirm`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: this.baseUrl },
      body: new URLSearchParams({ decision }),
    });
    const location = posted.headers.get('location');
    if (!location) throw new Error(`consent answer got ${posted.status}: ${await posted.text()}`);
    return (await this.follow(new URL(location, this.baseUrl).toString())).url;
  }
}
