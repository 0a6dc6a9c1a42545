import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect, password, signUpWithToken, test as base } from '../fixtures';
import { axeViolationsEverywhere } from '../helpers/axe';
import { callServerAction } from '../helpers/dashboard';
import { startHeaderEcho } from '../helpers/header-echo-upstream';
import { connectSdkClient } from '../helpers/mcp';
import { freePort, startServer, type TestServer } from '../helpers/server';
import { AuthPage } from '../pages/auth';
import { ServersPage } from '../pages/servers';
import { TokensPage } from '../pages/tokens';

const everythingEntry = path.resolve(__dirname, '..', '..', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');

/**
 * One server for the file, whose servers file holds a header-echoing upstream that takes each person's
 * own secret, server-everything over stdio, open only to the people of @example.com, and a server that
 * cannot be reached (nothing listens on its port), open only to the people of @elsewhere.example.org.
 */
const test = base.extend<object, { upstreams: { server: TestServer } }>({
  upstreams: [
    async ({}, use) => {
      const echo = await startHeaderEcho();
      const nobodyListens = await freePort();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'servers-spec-'));
      const file = path.join(dir, 'servers.json');
      fs.writeFileSync(
        file,
        JSON.stringify({
          mcpServers: {
            echo: { url: echo.url, perUserHeader: { name: 'Authorization', template: 'Bearer {secret}' } },
            everything: { command: process.execPath, args: [everythingEntry, 'stdio'], users: ['@example.com'] },
            gone: { url: `http://127.0.0.1:${nobodyListens}/mcp`, users: ['@elsewhere.example.org'] },
          },
        }),
      );
      const server = await startServer({ SIGNIN_MAX_PER_IP: '100000', SIGNUP_MAX_PER_IP: '100000', MCP_SERVERS_FILE: file });
      await use({ server });
      await server.stop();
      await echo.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    { scope: 'worker', timeout: 90_000 },
  ],
  baseURL: async ({ upstreams }, use) => {
    await use(upstreams.server.url);
  },
});

/** Calls the header echo's tool as the holder of `token`, with the official SDK client; the result's text and isError. */
async function whoami(server: TestServer, token: string): Promise<{ text: string; isError: boolean }> {
  const connection = await connectSdkClient(server.mcpUrl, token);
  try {
    const result = await connection.client.callTool({ name: 'echo__whoami', arguments: {} }, CallToolResultSchema, { timeout: 30_000 });
    const text = (result.content as Array<{ type: string; text?: string }>).map((block) => block.text ?? '').join('\n');
    return { text, isError: result.isError === true };
  } finally {
    await connection.close();
  }
}

test('each person saves their own secret for a server, their calls carry it, and it is never shown again', async ({ page, browser, upstreams }) => {
  test.setTimeout(180_000);
  const { server } = upstreams;
  const pageUrl = `${server.url}/servers`;
  const tokenA = await signUpWithToken(page, 'servers-a');

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Servers' }).click();
  const servers = new ServersPage(page);
  await expect(page.getByRole('heading', { name: 'Servers', exact: true })).toBeVisible();
  await servers.expectUp('echo');
  await servers.expectUp('everything');
  await expect(servers.server('echo')).toContainText('Streamable HTTP');
  await expect(servers.server('echo').getByRole('listitem')).toHaveText(['echo__whoami']);
  await expect(servers.server('everything')).toContainText('stdio');
  // server-everything has many tools: they are folded until asked for.
  const everythingTools = servers.server('everything').getByRole('listitem').filter({ hasText: 'everything__echo' });
  await expect(everythingTools).toBeHidden();
  await servers.server('everything').getByText(/^\d+ tools$/).click();
  await expect(everythingTools).toBeVisible();
  await expect(servers.server('everything').getByRole('listitem').filter({ hasText: 'everything__get-sum' })).toBeVisible();
  // A server without perUserHeader asks for nothing.
  await expect(servers.secretField('everything')).toHaveCount(0);

  // Before connecting, a call fails with a tool error that says where to add the secret.
  await expect(servers.server('echo').getByTestId('connection')).toHaveText(/^Not connected/);
  const before = await whoami(server, tokenA);
  expect(before.isError).toBe(true);
  expect(before.text).toContain(pageUrl);

  await expect(servers.secretField('echo')).toHaveAttribute('type', 'password');
  await expect(servers.secretField('echo')).toHaveValue('');
  await servers.saveSecret('echo', 'alpha');
  await expect(servers.server('echo').getByRole('status')).toHaveText('Saved. Your calls of echo’s tools now carry it.');
  await expect(servers.server('echo').getByTestId('connection')).toHaveText(/^Connected on /);
  await expect(servers.secretField('echo')).toHaveValue('');
  // Neither the page nor what the server sends for it holds the secret, then or later.
  expect(await page.content()).not.toContain('alpha');
  await page.reload();
  await expect(servers.server('echo').getByTestId('connection')).toHaveText(/^Connected on /);
  await expect(servers.secretField('echo')).toHaveValue('');
  expect(await page.content()).not.toContain('alpha');
  expect(await (await page.request.get('/servers')).text()).not.toContain('alpha');

  // Another person, in their own browser, saves theirs.
  const otherContext = await browser.newContext({ baseURL: server.url });
  const other = await otherContext.newPage();
  const tokenB = await signUpWithToken(other, 'servers-b');
  const otherServers = new ServersPage(other);
  await otherServers.goto();
  await expect(otherServers.server('echo').getByTestId('connection')).toHaveText(/^Not connected/);
  await otherServers.saveSecret('echo', 'beta');
  await expect(otherServers.server('echo').getByTestId('connection')).toHaveText(/^Connected on /);
  expect(await other.content()).not.toContain('beta');

  // Each call carries its own person's secret.
  expect(await whoami(server, tokenA)).toEqual({ text: 'Bearer alpha', isError: false });
  expect(await whoami(server, tokenB)).toEqual({ text: 'Bearer beta', isError: false });

  // The task of that call says where it ran.
  // A called first: the first call that completed is theirs (and their page would not show another's).
  const taskA = (server.db().prepare("SELECT id FROM tasks WHERE tool_name = 'echo__whoami' AND status = 'completed' ORDER BY created_at LIMIT 1").get() as { id: string }).id;
  await page.goto(`/tasks/${taskA}`);
  await expect(page.getByTestId('via-server')).toHaveText('via echo');
  await expect(page.getByTestId('upstream-task-id')).toHaveCount(0);
  // A tool that runs as a task upstream notes that task's id with ours; the page shows it.
  server.db().prepare('UPDATE tasks SET upstream_task_id = ? WHERE id = ?').run('upstream-task-7f3a', taskA);
  await page.reload();
  await expect(page.getByText('Task id on echo')).toBeVisible();
  await expect(page.getByTestId('upstream-task-id')).toHaveText('upstream-task-7f3a');
  expect(await axeViolationsEverywhere(page, `/tasks/${taskA}`)).toEqual([]);

  // The page, with servers up, a folded tool list and a saved secret, passes axe-core too.
  await servers.goto();
  expect(await axeViolationsEverywhere(page, '/servers')).toEqual([]);

  // Removed, the secret is gone: the call fails again, naming the page; the other person's still works.
  await servers.removeSecret('echo');
  await expect(servers.server('echo').getByTestId('connection')).toHaveText(/^Not connected/);
  await expect(servers.server('echo').getByRole('status')).toHaveCount(0);
  const after = await whoami(server, tokenA);
  expect(after.isError).toBe(true);
  expect(after.text).toContain(pageUrl);
  expect(await whoami(server, tokenB)).toEqual({ text: 'Bearer beta', isError: false });

  // Never written to the log either.
  expect(server.output()).not.toMatch(/alpha|beta/);
  await otherContext.close();
});

test('a person sees only the servers open to them, and one that is down says why and when it is tried again', async ({ page, upstreams }) => {
  const { server } = upstreams;
  await new AuthPage(page).signUp(`outsider-${Date.now().toString(36)}@elsewhere.example.org`, password);
  await page.waitForURL(/\/tasks$/);
  const tokens = new TokensPage(page);
  await tokens.goto();
  const token = await tokens.create('outsider');

  const servers = new ServersPage(page);
  await servers.goto();
  await servers.expectUp('echo');
  await expect(servers.server('everything')).toHaveCount(0);
  await expect(page.getByRole('heading', { name: 'everything' })).toHaveCount(0);
  await expect(servers.server('gone').locator('[data-state]')).toHaveAttribute('data-state', 'down');
  await expect(servers.server('gone')).toContainText('Streamable HTTP');
  await expect(servers.server('gone').getByTestId('server-state')).toHaveText(/^Down: .+\. Tried again (in \d+ seconds?|now)\.$/);
  await expect(servers.server('gone')).toContainText('None yet');
  expect(await axeViolationsEverywhere(page, '/servers')).toEqual([]);

  const connection = await connectSdkClient(server.mcpUrl, token);
  try {
    const names = (await connection.client.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain('echo__whoami');
    expect(names.filter((name) => name.startsWith('everything__'))).toEqual([]);
  } finally {
    await connection.close();
  }
});

test('a bad secret, or a hand-made post naming a server one may not give a secret for, gets a clear error', async ({ page, upstreams }) => {
  const { server } = upstreams;
  await signUpWithToken(page, 'servers-bad');
  const servers = new ServersPage(page);
  await servers.goto();
  await servers.expectUp('echo');

  // An empty secret, in the browser: said next to the field, and nothing is saved.
  await servers.saveSecret('echo', '');
  await expect(servers.server('echo').getByRole('alert')).toHaveText('Enter your secret first.');
  await expect(servers.secretField('echo')).toHaveAttribute('aria-invalid', 'true');
  await expect(servers.server('echo').getByTestId('connection')).toHaveText(/^Not connected/);

  // Posts made by hand, as anyone can make them.
  const cookie = (await page.context().cookies()).map((entry) => `${entry.name}=${entry.value}`).join('; ');
  const save = (fields: Record<string, string>) => {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.set(`_1_${name}`, value);
    form.set('0', JSON.stringify([{}, '$K1']));
    return callServerAction(server, { page: '/servers', filename: 'app/(dashboard)/servers/actions.ts', exportedName: 'saveServerSecretAction', body: form, cookie });
  };
  const noSuchServer = 'There is no server of that name for you that takes a secret of your own';
  for (const [fields, expected] of [
    [{ server: 'nope', secret: 'x' }, noSuchServer],
    // A server that exists but takes no secret of a person's own.
    [{ server: 'everything', secret: 'x' }, noSuchServer],
    [{ secret: 'x' }, noSuchServer],
    [{ server: 'echo', secret: '' }, 'Enter your secret first.'],
    [{ server: 'echo', secret: '   ' }, 'Enter your secret first.'],
    [{ server: 'echo', secret: 'two\nlines' }, 'A secret must be one line: remove the line breaks.'],
    [{ server: 'echo', secret: 'x'.repeat(4097) }, 'A secret is at most 4096 characters.'],
    [{ server: 'echo', secret: 'caf\u00e9' }, 'A secret may hold only letters, digits, spaces and the punctuation of a plain keyboard'],
  ] as const) {
    const reply = await save(fields);
    expect(reply.status, JSON.stringify(fields).slice(0, 80)).toBe(200);
    expect(reply.text, JSON.stringify(fields).slice(0, 80)).toContain(expected);
  }
  const remove = (body: string) =>
    callServerAction(server, { page: '/servers', filename: 'app/(dashboard)/servers/actions.ts', exportedName: 'removeServerSecretAction', body, cookie });
  for (const body of ['["nope"]', '["everything"]', '[42]', '[]']) {
    const reply = await remove(body);
    expect(reply.status, body).toBe(200);
    expect(reply.text, body).toContain(noSuchServer);
  }
  expect((await remove('["echo"]')).text).toContain('You have no secret saved for this server.');
  await page.reload();
  await expect(servers.server('echo').getByTestId('connection')).toHaveText(/^Not connected/);
});

base('without a servers file, the page says how an operator adds servers', async ({ page }) => {
  await signUpWithToken(page, 'no-servers');
  await new ServersPage(page).goto();
  const empty = page.locator('section', { has: page.getByRole('heading', { name: 'No servers for you yet' }) });
  await expect(empty).toContainText('MCP_SERVERS_FILE');
  await expect(empty).toContainText('The servers people already run');
  expect(await axeViolationsEverywhere(page, '/servers')).toEqual([]);
});
