import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect, password, test, uniqueEmail } from '../fixtures';
import { connectSdkClient, RawMcp } from '../helpers/mcp';
import { createToken, startServer } from '../helpers/server';
import { AuthPage } from '../pages/auth';
import { TasksPage } from '../pages/tasks';
import { TokensPage } from '../pages/tokens';

const screenshots = path.join(__dirname, '..', '..', 'test-results', 'screenshots');

test.describe('accounts', () => {
  test('sign up, sign out, sign in, and a wrong password', async ({ page }) => {
    const auth = new AuthPage(page);
    const email = uniqueEmail('ada');
    await auth.signUp(email, password, 'Ada');
    await page.waitForURL(/\/tasks$/);
    await expect(page.getByRole('heading', { name: 'No tasks yet' })).toBeVisible();
    await expect(page.getByRole('link', { name: 'Connect a client' })).toBeVisible();
    await expect(page.getByText(email)).toBeVisible();

    await auth.signOut();
    await page.goto('/tasks');
    await expect(page).toHaveURL(/\/signin\?callbackUrl=%2Ftasks/);

    await auth.signIn(email, 'not the password');
    await expect(page.getByRole('alert').filter({ hasText: 'Wrong email or password.' })).toBeVisible();
    await expect(page).toHaveURL(/\/signin/);

    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/tasks$/);
  });

  test('sign-up explains a taken email, a bad email and a short password', async ({ page }) => {
    const auth = new AuthPage(page);
    const email = uniqueEmail('taken');
    await auth.signUp(email, password);
    await page.waitForURL(/\/tasks$/);
    await auth.signOut();

    await auth.signUp(email.toUpperCase(), password);
    await expect(page.getByText('An account with this email already exists. Sign in instead.')).toBeVisible();
    await auth.signUp('not-an-email', password);
    await expect(page.getByText('Enter a valid email address.')).toBeVisible();
    await auth.signUp(uniqueEmail('short'), 'short');
    await expect(page.getByText('Use at least 8 characters.')).toBeVisible();
    await expect(page).toHaveURL(/\/signup$/);
  });

  test('an expired session sends people to sign in with a clear message', async ({ page, context, baseURL }) => {
    const auth = new AuthPage(page);
    await auth.signUp(uniqueEmail('expired'), password);
    await page.waitForURL(/\/tasks$/);
    const cookies = await context.cookies();
    const session = cookies.find((cookie) => cookie.name.endsWith('next-auth.session-token'))!;
    await context.addCookies([{ ...session, value: `${session.value.slice(0, -8)}AAAAAAAA`, url: baseURL }].map(({ domain: _d, path: _p, ...rest }) => rest));
    await page.goto('/tokens');
    await expect(page).toHaveURL(/\/signin\?.*reason=expired/);
    await expect(page.getByRole('status').filter({ hasText: 'Your session has expired. Sign in again to continue.' })).toBeVisible();
  });

  test('a user made by token:create sets a password on the command line and signs in', async ({ page, server }) => {
    const email = uniqueEmail('cli');
    createToken(server, email);
    const result = spawnSync(process.execPath, [path.join('node_modules', 'tsx', 'dist', 'cli.mjs'), 'scripts/user-password.ts', '--email', email], {
      env: { ...process.env, ...server.env, PASSWORD: password },
      encoding: 'utf8',
    });
    expect(result.status).toBe(0);
    const auth = new AuthPage(page);
    await auth.signIn(email, password);
    await page.waitForURL(/\/tasks$/);
  });

  test('sign-up can be closed', async ({ page }) => {
    const closed = await startServer({ ALLOW_SIGNUP: 'false' });
    try {
      await page.goto(`${closed.url}/signup`);
      await expect(page.getByRole('heading', { name: 'Sign-up is closed' })).toBeVisible();
      await page.goto(`${closed.url}/signin`);
      await expect(page.getByRole('link', { name: 'Create one' })).toHaveCount(0);
    } finally {
      await closed.stop();
    }
  });
});

test.describe('tokens and live tasks', () => {
  test('a token made in the browser drives an MCP client whose task shows up live, then is cancelled and revoked', async ({ page, server }) => {
    const auth = new AuthPage(page);
    await auth.signUp(uniqueEmail('live'), password);
    await page.waitForURL(/\/tasks$/);

    const tokens = new TokensPage(page);
    await tokens.goto();
    await page.getByRole('button', { name: 'Create token' }).click();
    await expect(page.getByRole('alert').filter({ hasText: 'Give the token a name, such as the client or machine that will use it.' })).toBeVisible();
    const token = await tokens.create('sdk-client', '30');
    await expect(tokens.row('sdk-client')).toContainText(`mcp_pat_…${token.slice(-4)}`);

    const tasksPage = new TasksPage(page);
    await tasksPage.goto();
    await page.evaluate(() => ((window as unknown as { marker: string }).marker = 'no reload'));

    const sdk = await connectSdkClient(server.mcpUrl, token, { name: 'e2e-client' });
    let taskId = '';
    const stream = sdk.client.experimental.tasks.callToolStream({ name: 'delay', arguments: { seconds: 4 } }, CallToolResultSchema, { task: {} });
    const first = await stream.next();
    if (!first.done && first.value.type === 'taskCreated') taskId = first.value.task.taskId;
    expect(taskId).not.toBe('');

    const row = tasksPage.row(taskId);
    await expect(row).toBeVisible();
    await expect(row.locator('[data-status="working"]')).toContainText('Working');
    const bar = row.getByRole('progressbar');
    await expect(bar).toHaveAttribute('aria-valuenow', /^(1|1\.5|2|2\.5|3)$/);
    await page.screenshot({ path: path.join(screenshots, 'tasks-list.png'), fullPage: true });
    let result: unknown;
    for await (const message of stream) if (message.type === 'result') result = message.result;
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'Waited 4 s.' }] });
    await expect(row.locator('[data-status="completed"]')).toContainText('Completed');
    await expect(bar).toHaveAttribute('aria-valuenow', '4');
    expect(await page.evaluate(() => (window as unknown as { marker: string }).marker)).toBe('no reload');

    // Cancel a running task from its page; the client sees cancelled.
    const long = await sdk.client.experimental.tasks.callToolStream({ name: 'delay', arguments: { seconds: 120 } }, CallToolResultSchema, { task: {} }).next();
    const longId = !long.done && long.value.type === 'taskCreated' ? long.value.task.taskId : '';
    await tasksPage.openTask(longId);
    await expect(page.getByRole('heading', { name: 'delay' })).toBeVisible();
    await expect(page.getByText('e2e-client 1.2.3')).toBeVisible();
    await expect(page.getByRole('progressbar', { name: 'Task progress' })).toHaveAttribute('aria-valuenow', /^[1-9]/);
    await page.screenshot({ path: path.join(screenshots, 'task-detail-working.png'), fullPage: true });
    await tasksPage.cancelOpenTask();
    await expect(page.getByTestId('status-message')).toHaveText('The task was cancelled from the dashboard.');
    await expect(page.getByRole('button', { name: 'Cancel task' })).toHaveCount(0);
    expect((await sdk.client.experimental.tasks.getTask(longId)).status).toBe('cancelled');
    const lastEvent = page.getByLabel('Timeline').locator('li').last();
    await expect(lastEvent).toContainText('Cancelled');
    await expect(lastEvent).toContainText('· Dashboard');

    // The finished task's page shows its result and timeline.
    await tasksPage.openTask(taskId);
    await expect(page.getByText('Waited 4 s.')).toBeVisible();
    await expect(page.getByLabel('Timeline').locator('li')).toHaveCount(2);
    await page.screenshot({ path: path.join(screenshots, 'task-detail.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto('/tasks');
    await page.screenshot({ path: path.join(screenshots, 'tasks-list-phone.png'), fullPage: true });

    // Revoking the token in the browser locks the client out at once, and ends its open streams at once.
    const watcher = new RawMcp(server.mcpUrl, token);
    await watcher.initialize();
    const watched = await watcher.openGetStream();
    await watched.next();
    await tokens.goto();
    await tokens.revoke('sdk-client');
    expect(await watched.next(500)).toBeNull();
    const raw = new RawMcp(server.mcpUrl, token);
    raw.sessionId = sdk.transport.sessionId;
    const reply = await raw.request('ping');
    expect(reply.status).toBe(401);
    await sdk.client.close();
  });

  test("a second user sees none of the first user's tasks and gets 404 on their URLs", async ({ page, server, browser }) => {
    const auth = new AuthPage(page);
    const ownerEmail = uniqueEmail('owner');
    await auth.signUp(ownerEmail, password);
    await page.waitForURL(/\/tasks$/);
    const tokens = new TokensPage(page);
    await tokens.goto();
    const token = await tokens.create('owner-token');
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize();
    const task = await mcp.startDelayTask(0);

    const otherContext = await browser.newContext({ baseURL: server.url });
    const other = await otherContext.newPage();
    await new AuthPage(other).signUp(uniqueEmail('other'), password);
    await other.waitForURL(/\/tasks$/);
    await expect(other.locator(`tr[data-task-id="${task.taskId}"]`)).toHaveCount(0);
    await expect(other.getByRole('heading', { name: 'No tasks yet' })).toBeVisible();

    const theirs = await other.goto(`/tasks/${task.taskId}`);
    expect(theirs?.status()).toBe(404);
    await expect(other.getByRole('heading', { name: 'Task not found' })).toBeVisible();
    const unknown = await other.goto(`/tasks/${crypto.randomUUID()}`);
    expect(unknown?.status()).toBe(404);
    const malformed = await other.goto('/tasks/not-a-task-id');
    expect(malformed?.status()).toBe(404);
    await expect(other.getByRole('heading', { name: 'Task not found' })).toBeVisible();
    await otherContext.close();

    const own = await page.goto(`/tasks/${task.taskId}`);
    expect(own?.status()).toBe(200);
  });

  test('filters by status, tool and id, and pages through many tasks', async ({ page, server }) => {
    const auth = new AuthPage(page);
    await auth.signUp(uniqueEmail('pager'), password);
    await page.waitForURL(/\/tasks$/);
    const token = await (async () => {
      const tokens = new TokensPage(page);
      await tokens.goto();
      return tokens.create('pager');
    })();
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize();
    const ids: string[] = [];
    for (let i = 0; i < 30; i += 1) ids.push((await mcp.startDelayTask(0, i % 10 === 0 ? { arguments: { seconds: 0, fail: true } } : {})).taskId);
    const questions: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      questions.push((await mcp.call('tools/call', { name: 'ask_human', arguments: { question: `Filter ${i}?` }, task: {} })).task.taskId);
    }

    await page.goto('/tasks');
    await expect(page.locator('tr[data-task-id]')).toHaveCount(25);
    await page.getByRole('link', { name: 'Older →' }).click();
    await expect(page.locator('tr[data-task-id]')).toHaveCount(7);
    await expect(page.locator(`tr[data-task-id="${ids[0]}"]`)).toBeVisible();

    await page.goto('/tasks');
    await page.getByLabel('Tool').selectOption('ask_human');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect(page.locator('tr[data-task-id]')).toHaveCount(2);
    for (const taskId of questions) await expect(page.locator(`tr[data-task-id="${taskId}"]`)).toBeVisible();
    await page.getByLabel('Tool').selectOption('delay');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect(page.locator('tr[data-task-id]')).toHaveCount(25);
    for (const taskId of questions) await expect(page.locator(`tr[data-task-id="${taskId}"]`)).toHaveCount(0);
    await expect(page.locator(`tr[data-task-id="${ids[29]}"]`)).toBeVisible();

    await page.goto('/tasks');
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect(page.locator('tr[data-task-id]')).toHaveCount(3);

    await page.goto('/tasks');
    await page.getByLabel('Task id').fill(ids[7].slice(0, 13));
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect(page.locator('tr[data-task-id]')).toHaveCount(1);
    await expect(page.locator(`tr[data-task-id="${ids[7]}"]`)).toBeVisible();

    await page.goto('/tasks?cursor=garbage');
    await expect(page.getByRole('status').filter({ hasText: 'That page link is not valid any more; showing the newest tasks instead.' })).toBeVisible();
  });
});
