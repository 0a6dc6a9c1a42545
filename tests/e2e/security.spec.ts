import type { BrowserContext, Page, Request } from '@playwright/test';
import { expect, password, test, uniqueEmail } from '../fixtures';
import { RawMcp, SseReader } from '../helpers/mcp';
import { pkcePair, publicClientMetadata, registerClient } from '../helpers/oauth';
import { AuthPage } from '../pages/auth';
import { ConsentPage } from '../pages/oauth';
import { TasksPage } from '../pages/tasks';
import { TokensPage } from '../pages/tokens';

/** Collects what Chromium reports as blocked by the Content Security Policy. */
function watchPolicyViolations(page: Page): string[] {
  const violations: string[] = [];
  page.on('console', (message) => {
    if (message.text().includes('Content Security Policy')) violations.push(message.text());
  });
  return violations;
}

async function signUp(page: Page, label: string): Promise<string> {
  const email = uniqueEmail(label);
  await new AuthPage(page).signUp(email, password);
  await page.waitForURL(/\/tasks$/);
  return email;
}

function expectSecurityHeaders(where: string, headers: Record<string, string>): void {
  expect(headers['content-security-policy'], where).toContain("frame-ancestors 'none'");
  expect(headers['content-security-policy'], where).toContain("default-src 'self'");
  expect(headers['content-security-policy'], where).toContain("object-src 'none'");
  expect(headers['x-content-type-options'], where).toBe('nosniff');
  expect(headers['x-frame-options'], where).toBe('DENY');
  expect(headers['referrer-policy'], where).toBe('strict-origin-when-cross-origin');
}

test('every page carries the security headers', async ({ page }) => {
  for (const path of ['/signin', '/signup']) {
    const response = await page.goto(path);
    expectSecurityHeaders(path, response!.headers());
  }
});

test('signed-in pages, the consent page and the API carry the security headers too', async ({ page, server }) => {
  const email = await signUp(page, 'headers');
  for (const path of ['/tasks', '/tokens', '/connect']) {
    const response = await page.goto(path);
    expect(new URL(page.url()).pathname).toBe(path);
    expectSecurityHeaders(path, response!.headers());
  }

  const session = await page.request.get('/api/auth/session');
  expect(((await session.json()) as { user?: { email?: string } }).user?.email).toBe(email);
  expectSecurityHeaders('/api/auth/session', session.headers());
  const refused = await fetch(`${server.url}/api/tasks/events`);
  expect(refused.status).toBe(401);
  expectSecurityHeaders('/api/tasks/events, signed out', Object.fromEntries(refused.headers));

  // The consent page, reached as a client sends a person there: a registered client's authorization request.
  const redirectUri = 'http://127.0.0.1:53682/callback';
  const registered = await registerClient(server.url, publicClientMetadata('Headers client', redirectUri));
  expect(registered.status).toBe(201);
  const authorization = new URL('/oauth/authorize', server.url);
  const params = {
    response_type: 'code',
    client_id: ((await registered.json()) as { client_id: string }).client_id,
    redirect_uri: redirectUri,
    scope: 'mcp',
    state: 'headers',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    resource: server.mcpUrl,
  };
  for (const [name, value] of Object.entries(params)) authorization.searchParams.set(name, value);
  const consent = await page.goto(authorization.toString());
  expect(new URL(page.url()).pathname).toMatch(/^\/consent\/[^/]+$/);
  await new ConsentPage(page).expectClient('Headers client');
  expectSecurityHeaders(new URL(page.url()).pathname, consent!.headers());
});

test('the dashboard works under its Content Security Policy, with nothing blocked', async ({ page, server }) => {
  const violations = watchPolicyViolations(page);
  await signUp(page, 'csp');
  const tokens = new TokensPage(page);
  await tokens.goto();
  const token = await tokens.create('csp');
  const tasks = new TasksPage(page);
  await tasks.goto();
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const task = await mcp.startDelayTask(0);
  // The row arrives over the live event stream: scripts ran and the stream was allowed to connect.
  await expect(tasks.row(task.taskId)).toBeVisible();
  await tasks.openTask(task.taskId);
  await expect(page.getByText('completed').first()).toBeVisible();
  await page.goto('/connect');
  await expect(page.getByRole('heading', { name: 'Connect a client' })).toBeVisible();
  expect(violations).toEqual([]);
});

test('tool output is shown only for allowed image and audio types; the rest downloads as opaque bytes', async ({ page, server }) => {
  const violations = watchPolicyViolations(page);
  const email = await signUp(page, 'mime');
  const db = server.db();
  const { id: userId } = db.prepare('SELECT id FROM users WHERE email = ?').get(email) as { id: string };
  const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>').toString('base64');
  const html = Buffer.from('<script>alert(1)</script>').toString('base64');
  const id = crypto.randomUUID();
  const now = Date.now();
  const result = {
    content: [
      { type: 'image', data: pixel, mimeType: 'IMAGE/PNG; charset=binary' },
      { type: 'image', data: svg, mimeType: 'image/svg+xml' },
      { type: 'audio', data: html, mimeType: 'text/html' },
      { type: 'resource', resource: { uri: 'file:///page.html', mimeType: 'text/html', blob: html } },
    ],
  };
  db.prepare(
    `INSERT INTO tasks (id, user_id, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at, poll_interval_ms, result)
     VALUES (?, ?, 'media', '{}', 'completed', 'Done', ?, ?, 600000, ?, 1000, ?)`,
  ).run(id, userId, now, now, now + 600_000, JSON.stringify(result));
  db.prepare("INSERT INTO task_events (task_id, at, to_status, actor) VALUES (?, ?, 'completed', 'system')").run(id, now);

  await page.goto(`/tasks/${id}`);
  const images = page.getByRole('img', { name: 'Image returned by the tool' });
  await expect(images).toHaveCount(1);
  await expect(images).toHaveAttribute('src', `data:image/png;base64,${pixel}`);
  await expect(page.getByLabel('Audio returned by the tool')).toHaveCount(0);
  const image = page.getByRole('link', { name: /Download the image/ });
  await expect(image).toHaveAttribute('href', `data:application/octet-stream;base64,${svg}`);
  await expect(page.getByRole('link', { name: /Download the audio/ })).toHaveAttribute('href', `data:application/octet-stream;base64,${html}`);
  await expect(page.getByRole('link', { name: /^Download \(/ })).toHaveAttribute('href', `data:application/octet-stream;base64,${html}`);
  expect(violations).toEqual([]);
});

/** Replays a server action the page called, with other arguments, as anyone could. */
async function replayAction(page: Page, original: Request, body: string) {
  const headers = original.headers();
  return page.request.post(original.url(), {
    headers: {
      'next-action': headers['next-action'],
      'next-router-state-tree': headers['next-router-state-tree'] ?? '',
      accept: 'text/x-component',
      'content-type': 'text/plain;charset=UTF-8',
    },
    data: body,
  });
}

test('server actions refuse arguments of the wrong type with a message, not a 500', async ({ page, server }) => {
  await signUp(page, 'actions');
  const tokens = new TokensPage(page);
  await tokens.goto();
  const creating = page.waitForRequest((request) => request.method() === 'POST' && request.headers()['next-action'] !== undefined);
  const token = await tokens.create('actions');
  const createAction = await creating;

  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const task = await mcp.startDelayTask(600);
  const tasks = new TasksPage(page);
  await tasks.openTask(task.taskId);
  const cancelling = page.waitForRequest((request) => request.method() === 'POST' && request.headers()['next-action'] !== undefined);
  await tasks.cancelOpenTask();
  const cancelAction = await cancelling;
  await expect(page.getByText('cancelled').first()).toBeVisible();

  for (const body of ['[{"taskId":"x"}]', '[123]', '[]', '[null]']) {
    const reply = await replayAction(page, cancelAction, body);
    expect(reply.status(), body).toBe(200);
    expect(await reply.text(), body).toContain('This task no longer exists.');
  }
  for (const body of ['[null,5]', '[{},"name=x"]', '[]']) {
    const reply = await replayAction(page, createAction, body);
    expect(reply.status(), body).toBe(200);
    expect(await reply.text(), body).toContain('The form could not be read');
  }
  // The real call still works after all that.
  await tokens.goto();
  await tokens.create('still-works');
});

/** Opens the dashboard's event feed as the person signed in to this browser context. */
async function openFeed(url: string, context: BrowserContext): Promise<SseReader> {
  const cookie = (await context.cookies(url)).map(({ name, value }) => `${name}=${value}`).join('; ');
  const response = await fetch(`${url}/api/tasks/events`, { headers: { Cookie: cookie, Accept: 'text/event-stream' } });
  expect(response.status).toBe(200);
  const feed = new SseReader(response);
  expect(await feed.nextMessage()).toEqual({ type: 'ready' });
  return feed;
}

test("the dashboard's event feed refuses the signed-out and tells each person only of their own tasks", async ({ page, browser, server }) => {
  const signedOut = await fetch(`${server.url}/api/tasks/events`, { headers: { Accept: 'text/event-stream' } });
  expect(signedOut.status).toBe(401);
  expect(await signedOut.json()).toEqual({ error: 'Sign in to watch tasks.' });

  await signUp(page, 'feed-a');
  const tokensA = new TokensPage(page);
  await tokensA.goto();
  const clientA = new RawMcp(server.mcpUrl, await tokensA.create('feed-a'));
  const otherContext = await browser.newContext({ baseURL: server.url });
  try {
    const other = await otherContext.newPage();
    await signUp(other, 'feed-b');
    const tokensB = new TokensPage(other);
    await tokensB.goto();
    const clientB = new RawMcp(server.mcpUrl, await tokensB.create('feed-b'));
    await clientA.initialize();
    await clientB.initialize();
    const feedA = await openFeed(server.url, page.context());
    const feedB = await openFeed(server.url, otherContext);

    // A's task comes first: had B's feed carried it, B would hear of it before B's own.
    const taskA = await clientA.startDelayTask(0);
    const taskB = await clientB.startDelayTask(0);
    expect((await feedA.nextMessageWhere((event) => typeof event.taskId === 'string')).taskId).toBe(taskA.taskId);
    expect((await feedB.nextMessageWhere((event) => typeof event.taskId === 'string')).taskId).toBe(taskB.taskId);
    await feedA.close();
    await feedB.close();
  } finally {
    await otherContext.close();
  }
});
