import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpsDocumentServer } from '../helpers/https';
import { initializeWith, RawMcp } from '../helpers/mcp';
import { BrowserSession, pkcePair, publicClientMetadata, registerClient, tokenRequest } from '../helpers/oauth';
import { advanceClock, createToken, shiftedClockEnv, startServer, type TestServer } from '../helpers/server';
import { bearerChallenge, parseWwwAuthenticate } from '../helpers/www-authenticate';

const root = path.resolve(__dirname, '..', '..');
const tsxCli = path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const password = 'correct horse battery staple';
const redirectUri = 'http://127.0.0.1:53682/callback';
const registrationsPerHour = 40;

let server: TestServer;
let documents: HttpsDocumentServer;
let resource: string;
/** Every code, token and secret the server hands out in this suite: none may appear in its output. */
const issuedSecrets = new Set<string>();

function rememberSecrets(body: Record<string, unknown>): void {
  for (const name of ['code', 'access_token', 'refresh_token', 'client_secret', 'id_token']) {
    if (typeof body[name] === 'string') issuedSecrets.add(body[name] as string);
  }
}

async function tokenEndpoint(params: Record<string, string>, headers: Record<string, string> = {}, target: TestServer = server) {
  const result = await tokenRequest(target.url, params, headers);
  rememberSecrets(result.body);
  // A strict client must be able to read whatever challenge the token endpoint sends.
  if (result.challenge !== null) parseWwwAuthenticate(result.challenge);
  return result;
}

function runScript(script: string, args: string[], extraEnv: Record<string, string> = {}) {
  return spawnSync(process.execPath, [tsxCli, script, ...args], {
    cwd: root,
    env: { ...process.env, ...server.env, ...extraEnv },
    encoding: 'utf8',
  });
}

/** A person with a password (the user is created by the token CLI, as an operator would). */
function createPerson(email: string): void {
  createToken(server, email, 'setup');
  const result = runScript('scripts/user-password.ts', ['--email', email], { PASSWORD: password });
  if (result.status !== 0) throw new Error(result.stderr);
}

/** A public client registered by the operator (command line): vetted, so errors go back to it. */
function operatorClient(name: string): string {
  const result = runScript('scripts/oauth-client.ts', ['--name', name, '--redirect-uri', redirectUri, '--public']);
  if (result.status !== 0) throw new Error(result.stderr);
  return /client_id: (\S+)/.exec(result.stdout)![1];
}

async function signedIn(email: string): Promise<BrowserSession> {
  const browser = new BrowserSession(server.url);
  await browser.signIn(email, password);
  return browser;
}

async function publicClient(extra: Record<string, unknown> = {}): Promise<string> {
  const response = await registerClient(server.url, { ...publicClientMetadata('Raw test client', redirectUri), ...extra });
  expect(response.status).toBe(201);
  const client = (await response.json()) as { client_id: string };
  rememberSecrets(client);
  return client.client_id;
}

function authorizationUrl(clientId: string, challenge: string, overrides: Record<string, string | null> = {}): string {
  const params: Record<string, string | null> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'mcp',
    state: 'state-123',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource,
    ...overrides,
  };
  const url = new URL('/oauth/authorize', server.url);
  for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.set(name, value);
  return url.toString();
}

/** Runs the authorization step in a signed-in browser session and returns the code and the pkce verifier. */
async function authorize(browser: BrowserSession, clientId: string, overrides: Record<string, string | null> = {}) {
  const pkce = pkcePair();
  const landed = await browser.authorize(authorizationUrl(clientId, pkce.challenge, overrides));
  expect(landed.origin + landed.pathname).toBe(redirectUri);
  const code = landed.searchParams.get('code');
  expect(code, `no code in ${landed}`).toBeTruthy();
  issuedSecrets.add(code!);
  return { code: code!, verifier: pkce.verifier, landed };
}

/** A GET over node:http, which (unlike fetch) sends the Host header it is given. */
function rawGetJson(pathname: string, headers: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${server.url}${pathname}`, { headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => (body += chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`${pathname}: ${response.statusCode} ${body}`))));
    });
    request.on('error', reject);
  });
}

async function exchange(clientId: string, code: string, verifier: string, overrides: Record<string, string> = {}) {
  return tokenEndpoint({
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    code_verifier: verifier,
    redirect_uri: redirectUri,
    resource,
    ...overrides,
  });
}

async function tokensFor(browser: BrowserSession, clientId: string) {
  const { code, verifier } = await authorize(browser, clientId);
  const { status, body } = await exchange(clientId, code, verifier);
  expect(status, JSON.stringify(body)).toBe(200);
  return body as { access_token: string; refresh_token: string; scope: string; expires_in: number };
}

/**
 * Calls /mcp with a bearer token (or another Authorization header); a refusal's challenge is parsed
 * as a strict client parses it, so a malformed one fails the test.
 */
async function mcpStatus(token: string, authorization = token ? `Bearer ${token}` : ''): Promise<{ status: number; challenge: Record<string, string> }> {
  const { status, headers } = await initializeWith(server.mcpUrl, authorization);
  const header = headers.get('www-authenticate');
  if (status === 401 || status === 403) return { status, challenge: bearerChallenge(header) };
  expect(header).toBeNull();
  return { status, challenge: {} };
}

beforeAll(async () => {
  documents = await HttpsDocumentServer.start();
  server = await startServer({
    OAUTH_REGISTRATIONS_PER_HOUR: String(registrationsPerHour),
    OAUTH_CLIENT_METADATA_PRIVATE_HOSTS: 'localhost',
    NODE_EXTRA_CA_CERTS: documents.certificateFile,
    // Everything the server can log is logged: no secret may be among it.
    LOG_LEVEL: 'trace',
  });
  resource = `${server.url}/mcp`;
  createPerson('ada@example.com');
  createPerson('bob@example.com');
});

afterAll(async () => {
  await server?.stop();
  await documents?.stop();
});

describe('discovery', () => {
  // RFC 9728 section 3.3: each document names the resource its address was made from.
  it('publishes protected resource metadata for /mcp at the path-aware address and for the server at the root', async () => {
    for (const [suffix, named] of [['/.well-known/oauth-protected-resource/mcp', resource], ['/.well-known/oauth-protected-resource', server.url]]) {
      const response = await fetch(`${server.url}${suffix}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        resource: named,
        authorization_servers: [server.url],
        scopes_supported: ['mcp'],
        bearer_methods_supported: ['header'],
      });
    }
  });

  it('issues tokens for the resource the root document names, which /mcp accepts', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const { code, verifier } = await authorize(ada, clientId, { resource: server.url });
    const { status, body } = await exchange(clientId, code, verifier, { resource: server.url });
    expect(status, JSON.stringify(body)).toBe(200);
    expect((await mcpStatus(body.access_token)).status).toBe(200);
  });

  it('builds every address in its metadata from APP_URL, whatever Host the request names', async () => {
    const spoofed: Array<Record<string, string>> = [{ host: 'evil.example' }, { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }];
    for (const headers of spoofed) {
      for (const pathname of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration', '/.well-known/oauth-protected-resource/mcp']) {
        const metadata = await rawGetJson(pathname, headers);
        const addresses = Object.entries(metadata).filter(([, value]) => typeof value === 'string' && /^https?:/.test(value));
        expect(addresses.length, pathname).toBeGreaterThan(0);
        for (const [name, value] of addresses) expect(`${name}: ${value}`).toMatch(new RegExp(`^${name}: ${server.url}(/|$)`));
      }
    }
  });

  it('publishes authorization server metadata (RFC 8414) at both addresses', async () => {
    for (const suffix of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const metadata = (await (await fetch(`${server.url}${suffix}`)).json()) as Record<string, any>;
      expect(metadata.issuer).toBe(server.url);
      expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
      expect(metadata.client_id_metadata_document_supported).toBe(true);
      expect(metadata.registration_endpoint).toBe(`${server.url}/oauth/register`);
      expect(metadata.revocation_endpoint).toBe(`${server.url}/oauth/revoke`);
      expect(metadata.token_endpoint_auth_methods_supported).toContain('none');
      expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']));
      expect(metadata.grant_types_supported).not.toContain('implicit');
      expect(metadata.response_types_supported).toEqual(['code']);
      expect(metadata.authorization_response_iss_parameter_supported).toBe(true);
    }
  });

  it('keeps its signing keys beside the database, readable by the server only, and publishes them', async () => {
    const published = (await (await fetch(`${server.url}/oauth/jwks`)).json()) as { keys: Array<{ kid: string; d?: string }> };
    const keysFile = path.join(server.dataDir, 'oauth-keys.json');
    expect(fs.statSync(keysFile).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(fs.readFileSync(keysFile, 'utf8')) as { keys: Array<{ kid: string; d?: string }> };
    expect(published.keys.map((key) => key.kid)).toEqual(stored.keys.map((key) => key.kid));
    expect(published.keys.every((key) => key.d === undefined)).toBe(true);

    expect(runScript('scripts/oauth-rotate-key.ts', []).status).toBe(0);
    const rotated = JSON.parse(fs.readFileSync(keysFile, 'utf8')) as { keys: Array<{ kid: string }> };
    expect(rotated.keys).toHaveLength(stored.keys.length + 1);
    expect(rotated.keys[1].kid).toBe(stored.keys[0].kid);
    expect(fs.statSync(keysFile).mode & 0o777).toBe(0o600);
  });

  it('answers /mcp without a token with 401 and where to discover the authorization server', async () => {
    const { status, challenge } = await mcpStatus('');
    expect(status).toBe(401);
    expect(challenge.resource_metadata).toBe(`${server.url}/.well-known/oauth-protected-resource/mcp`);
    expect(challenge.scope).toBe('mcp');
    expect(challenge.error).toBeUndefined();
  });

  // RFC 6750 section 3.1: a request that carries no bearer token gets no error code.
  it('answers another authentication scheme as a request without a token', async () => {
    for (const authorization of [`Basic ${Buffer.from('ada:secret').toString('base64')}`, 'Digest username="ada"']) {
      const { status, challenge } = await mcpStatus('', authorization);
      expect(status).toBe(401);
      expect(challenge.error).toBeUndefined();
      expect(challenge.resource_metadata).toBe(`${server.url}/.well-known/oauth-protected-resource/mcp`);
    }
  });

  it('says invalid_token, with the metadata address, for a token it does not know or cannot read', async () => {
    for (const token of ['A'.repeat(43), 'not a token']) {
      const { status, challenge } = await mcpStatus('', `Bearer ${token}`);
      expect(status).toBe(401);
      expect(challenge.error).toBe('invalid_token');
      expect(challenge.resource_metadata).toBe(`${server.url}/.well-known/oauth-protected-resource/mcp`);
    }
  });

  it('keeps personal access tokens working', async () => {
    const mcp = new RawMcp(server.mcpUrl, createToken(server, 'ada@example.com', 'pat'));
    await mcp.initialize();
    expect((await mcp.request('ping')).status).toBe(200);
  });
});

describe('authorization code with PKCE', () => {
  it('issues a code with state and iss, then tokens bound to /mcp that run tasks as the person', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const { code, verifier, landed } = await authorize(ada, clientId);
    expect(landed.searchParams.get('state')).toBe('state-123');
    expect(landed.searchParams.get('iss')).toBe(server.url);
    const { status, body } = await exchange(clientId, code, verifier);
    expect(status).toBe(200);
    expect(body.token_type).toBe('Bearer');
    expect(body.scope).toBe('mcp');
    expect(body.expires_in).toBe(3600);
    expect(body.refresh_token).toBeTruthy();

    const mcp = new RawMcp(server.mcpUrl, body.access_token);
    await mcp.initialize();
    const created = await mcp.startDelayTask(0);
    const taskId = created.taskId;
    const row = server.db().prepare('SELECT user_id FROM tasks WHERE id = ?').get(taskId) as { user_id: string };
    const consent = server.db().prepare('SELECT registration, redirect_host, scope, last_used_at FROM oauth_consents WHERE client_id = ?').get(clientId) as Record<string, unknown>;
    expect(consent).toMatchObject({ registration: 'dynamic', redirect_host: '127.0.0.1:53682', scope: 'mcp' });
    expect(consent.last_used_at).toEqual(expect.any(Number));
    const adaUser = server.db().prepare("SELECT id FROM users WHERE email = 'ada@example.com'").get() as { id: string };
    expect(row.user_id).toBe(adaUser.id);

    // Nothing the server issued is stored in clear.
    const stored = JSON.stringify(server.db().prepare('SELECT * FROM oauth_records').all());
    for (const secret of [code, body.access_token, body.refresh_token]) expect(stored).not.toContain(secret);
  });

  it('remembers consent: the same person and client are not asked again', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    await tokensFor(ada, clientId);
    const pkce = pkcePair();
    const landed = (await ada.follow(authorizationUrl(clientId, pkce.challenge))).url;
    expect(landed.origin + landed.pathname).toBe(redirectUri);
    expect(landed.searchParams.get('code')).toBeTruthy();
  });

  it('sends a person who is not signed in to the sign-in page, and back to the same step', async () => {
    const clientId = await publicClient();
    const browser = new BrowserSession(server.url);
    const first = await browser.follow(authorizationUrl(clientId, pkcePair().challenge));
    expect(first.url.pathname).toBe('/signin');
    const callback = first.url.searchParams.get('callbackUrl')!;
    expect(callback).toMatch(/^\/oauth\/interaction\/[A-Za-z0-9_-]+$/);
    await browser.signIn('ada@example.com', password);
    const next = await browser.follow(callback);
    expect(next.url.pathname).toMatch(/^\/consent\//);
    expect(await next.response.text()).toContain('Raw test client');
  });

  it('returns access_denied to the client when the person presses Deny, and issues nothing', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const landed = await ada.authorize(authorizationUrl(clientId, pkcePair().challenge), 'deny');
    expect(landed.origin + landed.pathname).toBe(redirectUri);
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('code')).toBeNull();
    expect(server.db().prepare("SELECT count(*) AS n FROM oauth_consents WHERE client_id = ?").get(clientId)).toEqual({ n: 0 });
  });

  it('refuses plain and missing PKCE challenges: on a page for a self-registered client, at the redirect URI for a vetted one', async () => {
    const ada = await signedIn('ada@example.com');
    const preregistered = operatorClient('PKCE check');
    for (const overrides of [{ code_challenge_method: 'plain' }, { code_challenge: null, code_challenge_method: null }] as Array<Record<string, string | null>>) {
      const shown = await ada.follow(authorizationUrl(await publicClient(), pkcePair().challenge, overrides));
      expect(shown.url.origin).toBe(server.url);
      expect(shown.response.status).toBe(400);
      expect(await shown.response.text()).toContain('invalid_request');

      const landed = await ada.authorize(authorizationUrl(preregistered, pkcePair().challenge, overrides));
      expect(landed.origin + landed.pathname).toBe(redirectUri);
      expect(landed.searchParams.get('error')).toBe('invalid_request');
      expect(landed.searchParams.get('code')).toBeNull();
    }
  });

  // RFC 9700 section 4.11.2: a client nobody vetted must not turn this server into an open redirector.
  it('never redirects to a self-registered or metadata-document client before the person has acted', async () => {
    const evil = 'https://evil.example/x';
    const registered = await publicClient({ redirect_uris: [evil] });
    const documentId = documents.url('/clients/evil.json');
    documents.serve('/clients/evil.json', { client_id: documentId, redirect_uris: [evil], token_endpoint_auth_method: 'none' });
    const stranger = new BrowserSession(server.url);
    const ada = await signedIn('ada@example.com');
    for (const clientId of [registered, documentId]) {
      const failing: Array<Record<string, string | null>> = [
        { code_challenge: null, code_challenge_method: null },
        { prompt: 'none' },
        { scope: 'mcp unknown-scope' },
        { resource: 'https://other.example/mcp' },
      ];
      for (const overrides of failing) {
        for (const browser of [stranger, ada]) {
          const response = await browser.request(authorizationUrl(clientId, pkcePair().challenge, { redirect_uri: evil, ...overrides }));
          const location = response.headers.get('location');
          expect(location === null || new URL(location, server.url).origin === server.url, `${JSON.stringify(overrides)} sent the browser to ${location}`).toBe(true);
          if (location === null) {
            expect(response.status).toBe(400);
            expect(response.headers.get('content-type')).toMatch(/text\/html/);
          }
        }
      }
    }
    // Deny is the person's own act: its answer goes back to the client.
    const denied = await ada.authorize(authorizationUrl(registered, pkcePair().challenge, { redirect_uri: evil }), 'deny');
    expect(denied.origin).toBe('https://evil.example');
    expect(denied.searchParams.get('error')).toBe('access_denied');
  });

  it('shows an error page, never redirecting, for a redirect_uri the client did not register', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const { response, url } = await ada.follow(authorizationUrl(clientId, pkcePair().challenge, { redirect_uri: 'https://evil.example/callback' }));
    expect(url.origin).toBe(server.url);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('redirect_uri');
  });

  it.each([['native'], ['web']])('accepts any port for a loopback redirect URI of a %s client (RFC 8252), nothing else', async (applicationType) => {
    const clientId = await publicClient({ application_type: applicationType });
    const ada = await signedIn('ada@example.com');
    const pkce = pkcePair();
    const otherPort = 'http://127.0.0.1:61111/callback';
    const landed = await ada.authorize(authorizationUrl(clientId, pkce.challenge, { redirect_uri: otherPort }));
    expect(landed.origin + landed.pathname).toBe(otherPort);
    const code = landed.searchParams.get('code')!;
    expect((await exchange(clientId, code, pkce.verifier, { redirect_uri: otherPort })).status).toBe(200);
    for (const other of ['http://127.0.0.1:61111/elsewhere', 'http://localhost:61111/callback', 'http://127.0.0.2:53682/callback']) {
      const refused = await ada.follow(authorizationUrl(clientId, pkce.challenge, { redirect_uri: other }));
      expect(refused.url.origin).toBe(server.url);
      expect(refused.response.status).toBe(400);
    }
  });

  it('asks again when a client it remembers wants more', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    await tokensFor(ada, clientId);
    const more = await ada.follow(authorizationUrl(clientId, pkcePair().challenge, { scope: 'mcp email' }));
    expect(more.url.pathname).toMatch(/^\/consent\//);
    expect(await more.response.text()).toContain('it now asks for more');
  });

  it('refuses a resource other than this server (RFC 8707)', async () => {
    const ada = await signedIn('ada@example.com');
    const landed = await ada.authorize(authorizationUrl(operatorClient('Resource check'), pkcePair().challenge, { resource: 'https://other.example/mcp' }));
    expect(landed.searchParams.get('error')).toBe('invalid_target');
    const shown = await ada.follow(authorizationUrl(await publicClient(), pkcePair().challenge, { resource: 'https://other.example/mcp' }));
    expect(shown.response.status).toBe(400);
    expect(await shown.response.text()).toContain('invalid_target');
  });

  it('issues a token without the mcp scope when it is not asked, which /mcp answers with 403 insufficient_scope', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const { code, verifier } = await authorize(ada, clientId, { scope: 'openid' });
    const { body } = await exchange(clientId, code, verifier);
    const { status, challenge } = await mcpStatus(body.access_token);
    expect(status).toBe(403);
    expect(challenge).toMatchObject({ error: 'insufficient_scope', scope: 'mcp', resource_metadata: `${server.url}/.well-known/oauth-protected-resource/mcp` });
    expect(challenge.error_description).toMatch(/mcp scope/);
  });
});

describe('token endpoint errors', () => {
  it('refuses a wrong verifier, a wrong redirect_uri and a wrong resource, and a code works only once', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');

    const wrongVerifier = await authorize(ada, clientId);
    expect((await exchange(clientId, wrongVerifier.code, pkcePair().verifier)).body.error).toBe('invalid_grant');

    const wrongRedirect = await authorize(ada, clientId);
    const redirectResult = await exchange(clientId, wrongRedirect.code, wrongRedirect.verifier, { redirect_uri: 'http://127.0.0.1:53682/other' });
    expect(redirectResult.body.error).toBe('invalid_grant');

    const wrongResource = await authorize(ada, clientId);
    const resourceResult = await exchange(clientId, wrongResource.code, wrongResource.verifier, { resource: 'https://other.example/mcp' });
    expect(resourceResult.body.error).toBe('invalid_target');

    const { code, verifier } = await authorize(ada, clientId);
    const first = await exchange(clientId, code, verifier);
    expect(first.status).toBe(200);
    expect((await mcpStatus(first.body.access_token)).status).toBe(200);
    const again = await exchange(clientId, code, verifier);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
    // A reused code revokes what it issued.
    expect((await mcpStatus(first.body.access_token)).status).toBe(401);
    expect((await tokenEndpoint({ grant_type: 'refresh_token', client_id: clientId, refresh_token: first.body.refresh_token })).body.error).toBe('invalid_grant');
  });

  it('answers invalid_client for an unknown client and for a deleted one, whose tokens end at once', async () => {
    expect((await exchange('no-such-client', 'x', 'y')).body.error).toBe('invalid_client');
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const bob = await signedIn('bob@example.com');
    const adaTokens = await tokensFor(ada, clientId);
    const bobTokens = await tokensFor(bob, clientId);
    const { code, verifier } = await authorize(ada, clientId);
    expect((await mcpStatus(adaTokens.access_token)).status).toBe(200);
    expect(runScript('scripts/oauth-client.ts', ['--delete', clientId]).status).toBe(0);
    const result = await exchange(clientId, code, verifier);
    expect(result.status).toBe(401);
    expect(result.body.error).toBe('invalid_client');
    for (const tokens of [adaTokens, bobTokens]) expect((await mcpStatus(tokens.access_token)).status).toBe(401);
    expect(server.db().prepare('SELECT count(*) AS n FROM oauth_consents WHERE client_id = ?').get(clientId)).toEqual({ n: 0 });
  });

  it('lets only one of two simultaneous redemptions of a code win, and treats the other as reuse', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const { code, verifier } = await authorize(ada, clientId);
    const results = await Promise.all(Array.from({ length: 4 }, () => exchange(clientId, code, verifier)));
    const winners = results.filter((result) => result.status === 200);
    expect(winners.length, JSON.stringify(results.map((result) => result.body))).toBe(1);
    for (const loser of results.filter((result) => result.status !== 200)) expect(loser.body.error).toBe('invalid_grant');
    // A reused code revokes what it issued, the winner's tokens included.
    expect((await mcpStatus(winners[0].body.access_token)).status).toBe(401);
  });

  it('lets only one of two simultaneous uses of a refresh token win, and treats the other as reuse', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const tokens = await tokensFor(ada, clientId);
    const refresh = () => tokenEndpoint({ grant_type: 'refresh_token', client_id: clientId, refresh_token: tokens.refresh_token, resource });
    const results = await Promise.all(Array.from({ length: 4 }, refresh));
    const winners = results.filter((result) => result.status === 200);
    expect(winners.length, JSON.stringify(results.map((result) => result.body))).toBe(1);
    for (const loser of results.filter((result) => result.status !== 200)) expect(loser.body.error).toBe('invalid_grant');
    expect((await mcpStatus(winners[0].body.access_token)).status).toBe(401);
    expect((await mcpStatus(tokens.access_token)).status).toBe(401);
  });

  it('rotates refresh tokens, and a reused one revokes the whole grant', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const first = await tokensFor(ada, clientId);
    const refreshed = await tokenEndpoint({ grant_type: 'refresh_token', client_id: clientId, refresh_token: first.refresh_token, resource });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).toBeTruthy();
    expect(refreshed.body.refresh_token).not.toBe(first.refresh_token);
    expect((await mcpStatus(refreshed.body.access_token)).status).toBe(200);

    const reused = await tokenEndpoint({ grant_type: 'refresh_token', client_id: clientId, refresh_token: first.refresh_token });
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');
    expect((await mcpStatus(refreshed.body.access_token)).status).toBe(401);
    const next = await tokenEndpoint({ grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshed.body.refresh_token });
    expect(next.body.error).toBe('invalid_grant');
  });

  it('revokes an access token (RFC 7009)', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const tokens = await tokensFor(ada, clientId);
    const response = await fetch(`${server.url}/oauth/revoke`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.access_token, client_id: clientId }),
    });
    expect(response.status).toBe(200);
    expect((await mcpStatus(tokens.access_token)).status).toBe(401);
  });

  it('refuses a token issued for another audience', async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const tokens = await tokensFor(ada, clientId);
    expect((await mcpStatus(tokens.access_token)).status).toBe(200);
    server
      .db()
      .prepare("UPDATE oauth_records SET payload = json_set(payload, '$.aud', 'https://other.example/mcp') WHERE model = 'AccessToken'")
      .run();
    const { status, challenge } = await mcpStatus(tokens.access_token);
    expect(status).toBe(401);
    expect(challenge.error).toBe('invalid_token');
    expect(challenge.error_description).toContain('another resource');
  });
});

describe('isolation between two people', () => {
  it("keeps one person's authorization step, tasks and connected apps away from another", async () => {
    const clientId = await publicClient();
    const ada = await signedIn('ada@example.com');
    const bob = await signedIn('bob@example.com');
    const adaTokens = await tokensFor(ada, clientId);
    const adaMcp = new RawMcp(server.mcpUrl, adaTokens.access_token);
    await adaMcp.initialize();
    const adaTask = (await adaMcp.startDelayTask(0)).taskId;

    const bobTokens = await tokensFor(bob, clientId);
    const bobMcp = new RawMcp(server.mcpUrl, bobTokens.access_token);
    await bobMcp.initialize();
    expect((await bobMcp.error('tasks/get', { taskId: adaTask })).code).toBe(-32602);
    const listed = await bobMcp.call('tasks/list');
    expect(listed.tasks.map((task: { taskId: string }) => task.taskId)).not.toContain(adaTask);

    // Ada's consent page, opened by Bob, is not found; his answer to her step is refused.
    const first = await ada.follow(authorizationUrl(await publicClient(), pkcePair().challenge));
    expect(first.url.pathname).toMatch(/^\/consent\//);
    const uid = first.url.pathname.split('/')[2];
    expect((await bob.request(`/consent/${uid}`)).status).toBe(404);
    const answer = await bob.request(`/oauth/interaction/${uid}/confirm`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: server.url },
      body: new URLSearchParams({ decision: 'allow' }),
    });
    expect(answer.status).toBe(400);
  });

  it('refuses a consent answer from another site', async () => {
    const ada = await signedIn('ada@example.com');
    const first = await ada.follow(authorizationUrl(await publicClient(), pkcePair().challenge));
    const uid = first.url.pathname.split('/')[2];
    const answer = await ada.request(`/oauth/interaction/${uid}/confirm`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'https://evil.example' },
      body: new URLSearchParams({ decision: 'allow' }),
    });
    expect(answer.status).toBe(403);
    expect(server.db().prepare('SELECT count(*) AS n FROM oauth_consents WHERE redirect_host IS NULL').get()).toEqual({ n: 0 });
  });
});

describe('client metadata documents', () => {
  const documentPath = (name: string) => `/clients/${name}.json`;

  async function authorizeWithDocument(clientId: string) {
    const ada = await signedIn('ada@example.com');
    return ada.follow(authorizationUrl(clientId, pkcePair().challenge));
  }

  /** The text of an element of the consent page, by its test id (null when it is not there). */
  function consentField(html: string, testId: string): string | null {
    const match = new RegExp(`data-testid="${testId}"[^>]*>([\\s\\S]*?)</dd>`).exec(html);
    return match ? match[1].replace(/<[^>]+>/g, '').replace(/&amp;/g, '&') : null;
  }

  it('uses a valid document: the consent page names the client by its full client_id, claims nothing more, and warns of another redirect host', async () => {
    const clientId = documents.url(documentPath('good'));
    documents.serve(documentPath('good'), { client_id: clientId, client_name: 'claude.ai', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' });
    const { url, response } = await authorizeWithDocument(clientId);
    expect(url.pathname).toMatch(/^\/consent\//);
    const html = await response.text();
    expect(consentField(html, 'client-identity')).toContain(clientId);
    expect(html).not.toMatch(/verified|who it says it is/i);
    expect(consentField(html, 'redirect-warning')).toContain(new URL(redirectUri).host);

    const sameHost = documents.url(documentPath('same-host'));
    documents.serve(documentPath('same-host'), { client_id: sameHost, redirect_uris: [documents.url('/callback')], token_endpoint_auth_method: 'none' });
    const ada = await signedIn('ada@example.com');
    const page = await ada.follow(authorizationUrl(sameHost, pkcePair().challenge, { redirect_uri: documents.url('/callback') }));
    expect(page.url.pathname).toMatch(/^\/consent\//);
    const sameHostHtml = await page.response.text();
    expect(consentField(sameHostHtml, 'client-identity')).toContain(sameHost);
    expect(consentField(sameHostHtml, 'redirect-warning')).toBeNull();
  });

  it.each([
    ['whose client_id is another URL', (id: string) => ({ client_id: `${id}-other`, redirect_uris: [redirectUri] })],
    ['without redirect_uris', (id: string) => ({ client_id: id })],
    ['larger than 5 KiB', (id: string) => ({ client_id: id, redirect_uris: [redirectUri], client_name: 'x'.repeat(6000) })],
  ])('refuses a document %s, on a page', async (_label, body) => {
    const name = `bad-${Math.random().toString(36).slice(2)}`;
    const clientId = documents.url(documentPath(name));
    documents.serve(documentPath(name), body(clientId));
    const { url, response } = await authorizeWithDocument(clientId);
    expect(url.origin).toBe(server.url);
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/invalid_client/);
  });

  it('refuses malformed JSON', async () => {
    const malformed = documents.url(documentPath('malformed'));
    documents.serveRaw(documentPath('malformed'), 200, '{"client_id": ');
    const { response } = await authorizeWithDocument(malformed);
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/invalid_client/);
  });

  it('never follows a redirect, even to a server with a valid document for the same client_id', async () => {
    const elsewhere = await HttpsDocumentServer.start(documents);
    try {
      const moved = documents.url(documentPath('moved'));
      const target = documentPath('moved-here');
      elsewhere.serve(target, { client_id: moved, client_name: 'Moved client', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' });
      documents.serveRaw(documentPath('moved'), 302, '', { Location: elsewhere.url(target) });
      const { url, response } = await authorizeWithDocument(moved);
      expect(url.origin).toBe(server.url);
      expect(response.status).toBe(400);
      expect(await response.text()).toMatch(/invalid_client/);
      expect(documents.requests(documentPath('moved'))).toBeGreaterThan(0);
      expect(elsewhere.requests(target)).toBe(0);
    } finally {
      await elsewhere.stop();
    }
  });

  it('gives up on a document that does not arrive within 2.5 s', async () => {
    const late = documents.url(documentPath('late'));
    documents.serveLate(documentPath('late'), { client_id: late, redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }, 20_000);
    const startedAt = Date.now();
    const { url, response } = await authorizeWithDocument(late);
    const waitedMs = Date.now() - startedAt;
    expect(url.origin).toBe(server.url);
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/invalid_client/);
    // The server closed each request itself (the library asks twice: once more to name the client on
    // the error page), long before the document would have come.
    expect(documents.requests(documentPath('late'))).toBeGreaterThan(0);
    await expect.poll(() => documents.abandonedRequests(documentPath('late'))).toBe(documents.requests(documentPath('late')));
    // Between one 2.5 s wait and the two the library makes, far from the 20 s the document would take.
    expect(waitedMs).toBeGreaterThanOrEqual(2400);
    expect(waitedMs).toBeLessThan(15_000);
  });

  it('never fetches a document from a private address the setting does not name', async () => {
    const clientId = `https://127.0.0.1:${documents.port}${documentPath('private')}`;
    documents.serve(documentPath('private'), { client_id: clientId, redirect_uris: [redirectUri] });
    const { response } = await authorizeWithDocument(clientId);
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/invalid_client/);
    expect(documents.requests(documentPath('private'))).toBe(0);
  });
});

describe('registration', () => {
  it('registers a confidential client with a secret that authenticates at the token endpoint', async () => {
    const response = await registerClient(server.url, { client_name: 'Confidential', redirect_uris: [redirectUri] });
    expect(response.status).toBe(201);
    const client = (await response.json()) as { client_id: string; client_secret: string; token_endpoint_auth_method: string };
    rememberSecrets(client);
    expect(client.client_secret).toBeTruthy();
    expect(client.token_endpoint_auth_method).toBe('client_secret_basic');
    const basic = (secret: string) => `Basic ${Buffer.from(`${client.client_id}:${secret}`).toString('base64')}`;
    const bogusCode = { grant_type: 'authorization_code', code: 'x', redirect_uri: redirectUri };
    expect((await tokenEndpoint(bogusCode, { Authorization: basic('wrong') })).body.error).toBe('invalid_client');
    // The right secret passes client authentication (and meets the bogus code).
    expect((await tokenEndpoint(bogusCode, { Authorization: basic(client.client_secret) })).body.error).toBe('invalid_grant');
    const posted = await tokenEndpoint({ ...bogusCode, client_id: client.client_id, client_secret: client.client_secret });
    expect(posted.body.error).toBe('invalid_grant');
    const postedWrong = await tokenEndpoint({ ...bogusCode, client_id: client.client_id, client_secret: `${client.client_secret}x` });
    expect(postedWrong.body.error).toBe('invalid_client');
    const stored = JSON.stringify(server.db().prepare("SELECT payload FROM oauth_records WHERE model = 'Client'").all());
    expect(stored).not.toContain(client.client_secret);
  });

  it('refuses malformed JSON, wrong types and bad redirect URIs', async () => {
    const malformed = await fetch(`${server.url}/oauth/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"redirect_uris": [' });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: string }).error).toBe('invalid_request');
    const wrongType = await registerClient(server.url, { redirect_uris: 'http://127.0.0.1/cb' });
    expect(wrongType.status).toBe(400);
    expect(((await wrongType.json()) as { error: string }).error).toMatch(/invalid_(client_metadata|redirect_uri)/);
    const fragment = await registerClient(server.url, { redirect_uris: ['https://app.example/cb#x'] });
    expect(((await fragment.json()) as { error: string }).error).toBe('invalid_redirect_uri');
  });

  it('refuses an oversized registration with 413', async () => {
    const response = await registerClient(server.url, { redirect_uris: [redirectUri], client_name: 'x'.repeat(10_000) });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_client_metadata');
  });

  it('prints a pre-registered client once and lets it sign in with its secret', async () => {
    const result = runScript('scripts/oauth-client.ts', ['--name', 'Operator connector', '--redirect-uri', redirectUri]);
    expect(result.status, result.stderr).toBe(0);
    const clientId = /client_id: (\S+)/.exec(result.stdout)![1];
    const clientSecret = /client_secret: (\S+)/.exec(result.stdout)![1];
    issuedSecrets.add(clientSecret);
    const ada = await signedIn('ada@example.com');
    const { code, verifier } = await authorize(ada, clientId);
    const basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    const tokens = await tokenEndpoint({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri, resource }, { Authorization: basic });
    expect(tokens.status).toBe(200);
    expect(server.db().prepare('SELECT registration FROM oauth_consents WHERE client_id = ?').get(clientId)).toEqual({ registration: 'preregistered' });
    expect(JSON.stringify(server.db().prepare("SELECT payload FROM oauth_records WHERE model = 'Client'").all())).not.toContain(clientSecret);
    const bad = runScript('scripts/oauth-client.ts', ['--name', 'No URI']);
    expect(bad.status).toBe(2);
  });
});

/**
 * A second server whose clock the tests move forward (tests/helpers/shifted-clock.cjs), behind a
 * trusted proxy (each test request names its client address in X-Forwarded-For), with a small
 * registration limit and a short life for clients nobody uses.
 */
describe('limits and lifetimes', () => {
  const registrationsPerHour = 3;
  const unusedClientTtlSeconds = 2 * 60 * 60;
  let timed: TestServer;

  beforeAll(async () => {
    timed = await startServer({
      ...shiftedClockEnv(),
      TRUST_PROXY: 'true',
      OAUTH_REGISTRATIONS_PER_HOUR: String(registrationsPerHour),
      OAUTH_UNUSED_CLIENT_TTL_SECONDS: String(unusedClientTtlSeconds),
      OAUTH_CLIENT_METADATA_PRIVATE_HOSTS: 'localhost',
      NODE_EXTRA_CA_CERTS: documents.certificateFile,
    });
    createToken(timed, 'ada@example.com', 'setup');
    const result = spawnSync(process.execPath, [tsxCli, 'scripts/user-password.ts', '--email', 'ada@example.com'], {
      cwd: root,
      env: { ...process.env, ...timed.env, PASSWORD: password },
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new Error(result.stderr);
  });

  afterAll(async () => {
    await timed?.stop();
    if (timed) fs.rmSync(timed.env.CLOCK_OFFSET_FILE, { force: true });
  });

  let addressCounter = 0;
  /** A client address of its own, so each test starts with a full registration allowance. */
  const freshAddress = () => `203.0.113.${(addressCounter += 1)}`;

  async function register(pathname: string, address: string, metadata: Record<string, unknown> = {}) {
    return fetch(`${timed.url}${pathname}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': `198.51.100.7, ${address}` },
      body: JSON.stringify({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', ...metadata }),
    });
  }

  async function timedSignedIn(): Promise<BrowserSession> {
    const browser = new BrowserSession(timed.url);
    await browser.signIn('ada@example.com', password);
    return browser;
  }

  function timedAuthorizationUrl(clientId: string, challenge: string): string {
    return authorizationUrl(clientId, challenge, { resource: `${timed.url}/mcp` }).replace(server.url, timed.url);
  }

  it('counts registrations per client address on every spelling of the path, and refuses the one past the limit', async () => {
    const address = freshAddress();
    const spellings = ['/oauth/register', '/oauth/register/', '/oauth/Register'];
    for (const pathname of spellings) expect((await register(pathname, address)).status, pathname).toBe(201);
    const refused = await register('/oauth/REGISTER/', address);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await register('/oauth/register', address)).status).toBe(429);
    // Another client behind the same proxy has its own allowance.
    expect((await register('/oauth/register', freshAddress())).status).toBe(201);
  });

  it('refuses an oversized registration on every spelling of the path', async () => {
    for (const pathname of ['/oauth/register', '/oauth/register/', '/oauth/REGISTER']) {
      const response = await register(pathname, freshAddress(), { client_name: 'x'.repeat(10_000) });
      expect(response.status, pathname).toBe(413);
      expect(((await response.json()) as { error: string }).error).toBe('invalid_client_metadata');
    }
  });

  it('lets a code live 60 s', async () => {
    const registered = (await (await register('/oauth/register', freshAddress())).json()) as { client_id: string };
    const ada = await timedSignedIn();
    const redeem = async () => {
      const pkce = pkcePair();
      const landed = await ada.authorize(timedAuthorizationUrl(registered.client_id, pkce.challenge));
      const code = landed.searchParams.get('code')!;
      issuedSecrets.add(code);
      return { code, verifier: pkce.verifier };
    };
    const exchangeAt = (code: string, verifier: string) =>
      tokenEndpoint({ grant_type: 'authorization_code', client_id: registered.client_id, code, code_verifier: verifier, redirect_uri: redirectUri, resource: `${timed.url}/mcp` }, {}, timed);
    const early = await redeem();
    const stale = await redeem();
    await advanceClock(timed, 55 * 1000);
    expect((await exchangeAt(early.code, early.verifier)).status).toBe(200);
    await advanceClock(timed, 6 * 1000);
    const late = await exchangeAt(stale.code, stale.verifier);
    expect(late.status).toBe(400);
    expect(late.body.error).toBe('invalid_grant');
  });

  it('forgets a registered client nobody used within OAUTH_UNUSED_CLIENT_TTL_SECONDS, and keeps one a person allowed', async () => {
    const unused = ((await (await register('/oauth/register', freshAddress())).json()) as { client_id: string }).client_id;
    const used = ((await (await register('/oauth/register', freshAddress())).json()) as { client_id: string }).client_id;
    const ada = await timedSignedIn();
    expect((await ada.authorize(timedAuthorizationUrl(used, pkcePair().challenge))).searchParams.get('code')).toBeTruthy();
    await advanceClock(timed, (unusedClientTtlSeconds + 60) * 1000);
    const forgotten = await ada.follow(timedAuthorizationUrl(unused, pkcePair().challenge));
    expect(forgotten.url.origin).toBe(timed.url);
    expect(forgotten.response.status).toBe(400);
    expect(await forgotten.response.text()).toMatch(/invalid_client/);
    expect((await ada.authorize(timedAuthorizationUrl(used, pkcePair().challenge))).searchParams.get('code')).toBeTruthy();
  });

  it('caches a metadata document by its Cache-Control, for at least 30 s and at most 24 h', async () => {
    const ada = await timedSignedIn();
    const cases = [
      { name: 'short-lived', maxAge: 1, stillCachedAfter: 20 * 1000, refetchedAfter: 11 * 1000 },
      { name: 'long-lived', maxAge: 10 * 24 * 60 * 60, stillCachedAfter: 23 * 60 * 60 * 1000, refetchedAfter: 61 * 60 * 1000 },
    ];
    for (const { name, maxAge, stillCachedAfter, refetchedAfter } of cases) {
      const pathname = `/clients/cached-${name}.json`;
      const clientId = documents.url(pathname);
      documents.serveRaw(pathname, 200, JSON.stringify({ client_id: clientId, redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }), {
        'Content-Type': 'application/json',
        'Cache-Control': `max-age=${maxAge}`,
      });
      const open = async () => expect((await ada.follow(timedAuthorizationUrl(clientId, pkcePair().challenge))).url.pathname).toMatch(/^\/consent\//);
      await open();
      expect(documents.requests(pathname)).toBe(1);
      await advanceClock(timed, stillCachedAfter);
      await open();
      expect(documents.requests(pathname), `${name}: still cached`).toBe(1);
      await advanceClock(timed, refetchedAfter);
      await open();
      expect(documents.requests(pathname), `${name}: fetched again`).toBe(2);
    }
  });
});

describe('secrets in the output', () => {
  it('never logs a code, token or client secret the server issued', async () => {
    // One more whole flow, with a confidential client, so every kind of secret has been issued.
    const registered = (await (await registerClient(server.url, { client_name: 'Logged?', redirect_uris: [redirectUri] })).json()) as { client_id: string; client_secret: string };
    rememberSecrets(registered);
    const ada = await signedIn('ada@example.com');
    const { code, verifier } = await authorize(ada, registered.client_id, { scope: 'openid mcp offline_access' });
    const basic = { Authorization: `Basic ${Buffer.from(`${registered.client_id}:${registered.client_secret}`).toString('base64')}` };
    const tokens = await tokenEndpoint({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri, resource }, basic);
    expect(tokens.status).toBe(200);
    const mcp = new RawMcp(server.mcpUrl, tokens.body.access_token);
    await mcp.initialize();
    await mcp.startDelayTask(0);
    await tokenEndpoint({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, resource }, basic);
    await tokenEndpoint({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, resource }, basic);

    expect(issuedSecrets.size).toBeGreaterThan(20);
    const output = server.output();
    expect(output.length).toBeGreaterThan(0);
    for (const secret of issuedSecrets) expect(output.includes(secret), `a secret ending ${secret.slice(-4)} is in the output`).toBe(false);
  });
});
