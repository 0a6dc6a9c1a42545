import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { test as base, expect, type Page } from '@playwright/test';
import { password, uniqueEmail } from '../fixtures';
import { axeViolationsEverywhere } from '../helpers/axe';
import { HttpsDocumentServer } from '../helpers/https';
import { initializeWith, RawMcp } from '../helpers/mcp';
import { MemoryOAuthClient, pkcePair, publicClientMetadata, registerClient, tokenRequest } from '../helpers/oauth';
import { startServer, type TestServer } from '../helpers/server';
import { AuthPage } from '../pages/auth';
import { ConnectedAppsPage, ConsentPage } from '../pages/oauth';

/**
 * The official SDK client's OAuth support against the real server, with the person signing in and
 * answering the consent page in Chromium. The server trusts the test's own https certificate, so a
 * Client ID Metadata Document can be served over https from loopback (a host the setting names).
 */
interface OAuthWorld {
  server: TestServer;
  documents: HttpsDocumentServer;
}

const test = base.extend<{ baseURL: string }, { world: OAuthWorld }>({
  world: [
    async ({}, use) => {
      const documents = await HttpsDocumentServer.start();
      const server = await startServer({ OAUTH_CLIENT_METADATA_PRIVATE_HOSTS: 'localhost', NODE_EXTRA_CA_CERTS: documents.certificateFile });
      await use({ server, documents });
      await server.stop();
      await documents.stop();
    },
    { scope: 'worker', timeout: 90_000 },
  ],
  baseURL: async ({ world }, use) => use(world.server.url),
});

let server: TestServer;
let documents: HttpsDocumentServer;
let callbackServer: http.Server;
let redirectUrl: string;
const callbacks: URL[] = [];
const email = uniqueEmail('oauth');

test.describe.configure({ mode: 'serial' });

test.beforeEach(({ world }) => {
  ({ server, documents } = world);
});

test.beforeAll(async () => {
  // The client's loopback redirect URI (RFC 8252): records what the browser brings back.
  callbackServer = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', redirectUrl);
    // The browser also asks for a favicon; only the redirect URI counts.
    if (url.pathname === '/callback') callbacks.push(url);
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('You can close this window.');
  });
  await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
  redirectUrl = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;
});

test.afterAll(async () => {
  callbackServer?.closeAllConnections();
  await new Promise((resolve) => callbackServer?.close(resolve));
});

async function signIn(page: Page) {
  await new AuthPage(page).signIn(email, password);
  await page.waitForURL(/\/tasks$/);
}

/** Connects the SDK client: the first attempt needs authorization; the browser gives it; then it connects. */
async function connectThroughBrowser(page: Page, oauth: MemoryOAuthClient, answer: (consent: ConsentPage) => Promise<void>) {
  const first = new Client({ name: 'oauth-e2e', version: '1.0.0' });
  await expect(first.connect(new StreamableHTTPClientTransport(new URL(server.mcpUrl), { authProvider: oauth }))).rejects.toBeInstanceOf(UnauthorizedError);
  expect(oauth.authorizationUrl?.origin).toBe(server.url);
  const before = callbacks.length;
  await page.goto(oauth.authorizationUrl!.toString());
  await answer(new ConsentPage(page));
  await expect.poll(() => callbacks.length, { timeout: 15_000 }).toBe(before + 1);
  return callbacks[before];
}

async function finishAndConnect(oauth: MemoryOAuthClient, code: string): Promise<Client> {
  await new StreamableHTTPClientTransport(new URL(server.mcpUrl), { authProvider: oauth }).finishAuth(code);
  const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
  client.onerror = () => {};
  await client.connect(new StreamableHTTPClientTransport(new URL(server.mcpUrl), { authProvider: oauth }));
  return client;
}

async function runDelayTask(client: Client): Promise<string> {
  let taskId = '';
  let result: unknown;
  for await (const message of client.experimental.tasks.callToolStream({ name: 'delay', arguments: { seconds: 0.2 } }, CallToolResultSchema, { task: { ttl: 600_000 } })) {
    if (message.type === 'taskCreated') taskId = message.task.taskId;
    if (message.type === 'result') result = message.result;
    if (message.type === 'error') throw message.error;
  }
  expect(result).toBeDefined();
  return taskId;
}

/** With the code the browser brought back: connects, runs a task, and finds it and the app in the dashboard. */
async function runTaskAndSeeIt(page: Page, oauth: MemoryOAuthClient, callback: URL, expected: { app: string; registration: string }) {
  const client = await finishAndConnect(oauth, callback.searchParams.get('code')!);
  const taskId = await runDelayTask(client);
  await client.close();
  await page.goto('/tasks');
  await expect(page.locator(`tr[data-task-id="${taskId}"]`)).toBeVisible();
  const apps = new ConnectedAppsPage(page, server.url);
  await apps.goto();
  await expect(apps.row(expected.app)).toContainText(expected.registration);
}

test('the SDK client registers itself, the person signs in and allows, and its task shows in their dashboard', async ({ page }) => {
  const auth = new AuthPage(page);
  await auth.signUp(email, password, 'Oauth Person');
  await page.waitForURL(/\/tasks$/);
  await auth.signOut();

  const oauth = new MemoryOAuthClient(redirectUrl, { client_name: 'SDK registered client' });
  const callback = await connectThroughBrowser(page, oauth, async (consent) => {
    await page.waitForURL(/\/signin\?callbackUrl=/);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await consent.expectClient('SDK registered client');
    await expect(consent.identity).toContainText('Self-asserted');
    await expect(consent.redirectHost).toHaveText(new URL(redirectUrl).host);
    await consent.allow();
  });
  expect(callback.searchParams.get('iss')).toBe(server.url);
  expect(oauth.information?.client_id).toBeTruthy();

  await runTaskAndSeeIt(page, oauth, callback, { app: 'SDK registered client', registration: 'Registered itself' });
});

test('the SDK client presents a Client ID Metadata Document: the consent page names it by its client_id', async ({ page }) => {
  const clientId = documents.url('/oauth/client.json');
  documents.serve('/oauth/client.json', { client_id: clientId, ...publicClientMetadata('Document client', redirectUrl) });
  await signIn(page);

  const oauth = new MemoryOAuthClient(redirectUrl, {}, clientId);
  const callback = await connectThroughBrowser(page, oauth, async (consent) => {
    await consent.expectClient('Document client');
    await expect(consent.identity).toContainText(clientId);
    await expect(consent.identity).not.toContainText(/verified/i);
    await consent.allow();
  });
  expect(oauth.information?.client_id).toBe(clientId);
  expect(documents.requests('/oauth/client.json')).toBeGreaterThan(0);
  await runTaskAndSeeIt(page, oauth, callback, { app: 'Document client', registration: 'Metadata document' });
});

test('Deny sends access_denied back to the client and connects nothing', async ({ page }) => {
  await signIn(page);

  const oauth = new MemoryOAuthClient(redirectUrl, { client_name: 'Client to deny' });
  const callback = await connectThroughBrowser(page, oauth, async (consent) => {
    await consent.expectClient('Client to deny');
    // The consent page passes axe-core like the dashboard's pages, in both schemes and at both sizes.
    expect(await axeViolationsEverywhere(page, 'consent')).toEqual([]);
    await consent.expectClient('Client to deny');
    await consent.deny();
  });
  expect(callback.searchParams.get('error')).toBe('access_denied');
  expect(callback.searchParams.get('code')).toBeNull();
  const apps = new ConnectedAppsPage(page, server.url);
  await apps.goto();
  await expect(apps.row('Client to deny')).toHaveCount(0);
});

test('Disconnect ends the tokens and an open stream at once', async ({ page }) => {
  await signIn(page);

  const oauth = new MemoryOAuthClient(redirectUrl, { client_name: 'Client to disconnect' });
  const callback = await connectThroughBrowser(page, oauth, async (consent) => {
    await consent.expectClient('Client to disconnect');
    await consent.allow();
  });
  const client = await finishAndConnect(oauth, callback.searchParams.get('code')!);
  await client.close();
  const { access_token: accessToken, refresh_token: refreshToken } = oauth.storedTokens!;

  const mcp = new RawMcp(server.mcpUrl, accessToken);
  await mcp.initialize();
  const stream = await mcp.openGetStream();
  expect(stream.response.status).toBe(200);

  const apps = new ConnectedAppsPage(page, server.url);
  await apps.goto();
  await apps.disconnect('Client to disconnect');
  await expect(apps.row('Client to disconnect')).toHaveCount(0);

  // The open stream ends at once (Disconnect ends the streams of the tokens it revoked), not at the
  // next periodic check: each read waits at most a second.
  let event = await stream.next(1_000);
  while (event !== null) event = await stream.next(1_000);
  expect((await mcp.request('ping')).status).toBe(401);
  const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', client_id: oauth.information!.client_id, refresh_token: refreshToken! });
  expect(refreshed.body.error).toBe('invalid_grant');
});

test('Disconnect also ends what was allowed in a second tab at the same time', async ({ page, context }) => {
  await signIn(page);
  const registered = await registerClient(server.url, { client_name: 'Client in two tabs', redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none' });
  const { client_id: clientId } = (await registered.json()) as { client_id: string };
  const tabs = [page, await context.newPage()];
  const verifiers: string[] = [];
  for (const tab of tabs) {
    const pkce = pkcePair();
    verifiers.push(pkce.verifier);
    const url = new URL('/oauth/authorize', server.url);
    for (const [name, value] of Object.entries({ response_type: 'code', client_id: clientId, redirect_uri: redirectUrl, scope: 'mcp', code_challenge: pkce.challenge, code_challenge_method: 'S256' })) {
      url.searchParams.set(name, value);
    }
    await tab.goto(url.toString());
    await new ConsentPage(tab).expectClient('Client in two tabs');
  }
  const issued: Array<{ access_token: string; refresh_token: string }> = [];
  for (const [index, tab] of tabs.entries()) {
    const before = callbacks.length;
    await new ConsentPage(tab).allow();
    await expect.poll(() => callbacks.length, { timeout: 15_000 }).toBe(before + 1);
    const code = callbacks[before].searchParams.get('code')!;
    const exchanged = await tokenRequest(server.url, { grant_type: 'authorization_code', client_id: clientId, code, code_verifier: verifiers[index], redirect_uri: redirectUrl });
    expect(exchanged.status).toBe(200);
    issued.push(exchanged.body as { access_token: string; refresh_token: string });
  }
  for (const tokens of issued) expect((await initializeWith(server.mcpUrl, `Bearer ${tokens.access_token}`)).status).toBe(200);

  const apps = new ConnectedAppsPage(page, server.url);
  await apps.goto();
  await apps.disconnect('Client in two tabs');
  await expect(apps.row('Client in two tabs')).toHaveCount(0);
  for (const tokens of issued) {
    expect((await initializeWith(server.mcpUrl, `Bearer ${tokens.access_token}`)).status).toBe(401);
    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', client_id: clientId, refresh_token: tokens.refresh_token });
    expect(refreshed.body.error).toBe('invalid_grant');
  }
});

test("another person sees none of these connected apps", async ({ page }) => {
  await signIn(page);
  const apps = new ConnectedAppsPage(page, server.url);
  await apps.goto();
  await expect(apps.row('SDK registered client')).toBeVisible();
  await new AuthPage(page).signOut();

  await new AuthPage(page).signUp(uniqueEmail('other'), password);
  await page.waitForURL(/\/tasks$/);
  await apps.goto();
  await expect(page.getByText('No connected apps yet.')).toBeVisible();
  await expect(apps.row('SDK registered client')).toHaveCount(0);
});
