import { expect, password, test, uniqueEmail } from '../fixtures';
import { RawMcp } from '../helpers/mcp';
import { AuthPage } from '../pages/auth';
import { TasksPage } from '../pages/tasks';
import { TokensPage } from '../pages/tokens';

test('the Connect page gives copy-ready setups filled with this server’s URL', async ({ page, server }) => {
  await new AuthPage(page).signUp(uniqueEmail('connect'), password);
  await page.waitForURL(/\/tasks$/);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Connect', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Connect a client' })).toBeVisible();
  const mcpUrl = `${server.url}/mcp`;
  await expect(page.getByText(`claude mcp add --transport http tasks ${mcpUrl} --header "Authorization: Bearer YOUR_TOKEN"`)).toBeVisible();
  await expect(page.getByText(`"url": "${mcpUrl}"`)).toBeVisible();
  await expect(page.getByText(`new URL('${mcpUrl}')`)).toBeVisible();
  for (const label of ['MCP URL', 'Claude Code command', 'VS Code .vscode/mcp.json', 'TypeScript SDK snippet']) {
    await expect(page.getByRole('button', { name: `Copy ${label}` })).toBeVisible();
  }
});

test('the task list falls back to polling when its event stream is unavailable', async ({ page, server }) => {
  await new AuthPage(page).signUp(uniqueEmail('polling'), password);
  await page.waitForURL(/\/tasks$/);
  const tokens = new TokensPage(page);
  await tokens.goto();
  const token = await tokens.create('polling');

  await page.route('**/api/tasks/events', (route) => route.abort());
  await page.goto('/tasks');
  await expect(page.locator('[data-live-mode="polling"]')).toBeVisible();
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const task = await mcp.startDelayTask(0);
  await expect(new TasksPage(page).row(task.taskId)).toBeVisible();
});

test('results are shown as a person wants them: text, media, resources, structured content and errors', async ({ page, server }) => {
  const email = uniqueEmail('results');
  await new AuthPage(page).signUp(email, password);
  await page.waitForURL(/\/tasks$/);
  const db = server.db();
  const { id: userId } = db.prepare('SELECT id FROM users WHERE email = ?').get(email) as { id: string };
  const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  const insert = (status: string, result: unknown, error: unknown = null) => {
    const id = crypto.randomUUID();
    const now = Date.now();
    db.prepare(
      `INSERT INTO tasks (id, user_id, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at, poll_interval_ms, result, error)
       VALUES (?, ?, 'rich', '{}', ?, 'Done', ?, ?, 600000, ?, 1000, ?, ?)`,
    ).run(id, userId, status, now, now, now + 600_000, result === null ? null : JSON.stringify(result), error === null ? null : JSON.stringify(error));
    db.prepare("INSERT INTO task_events (task_id, at, to_status, actor) VALUES (?, ?, ?, 'system')").run(id, now, status);
    return id;
  };
  const rich = insert('completed', {
    content: [
      { type: 'text', text: 'Line one\nLine two' },
      { type: 'image', data: pixel, mimeType: 'image/png' },
      { type: 'audio', data: 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=', mimeType: 'audio/wav' },
      { type: 'resource_link', uri: 'https://example.com/report.pdf', name: 'report.pdf', title: 'The report' },
      { type: 'resource', resource: { uri: 'file:///notes.txt', mimeType: 'text/plain', text: 'Embedded notes' } },
    ],
    structuredContent: { total: 42 },
  });
  await page.goto(`/tasks/${rich}`);
  await expect(page.getByText('Line one')).toBeVisible();
  expect(await page.getByText('Line one').evaluate((node) => getComputedStyle(node).whiteSpace)).toBe('pre-wrap');
  await expect(page.getByRole('img', { name: 'Image returned by the tool' })).toBeVisible();
  await expect(page.getByLabel('Audio returned by the tool')).toBeAttached();
  await expect(page.getByRole('link', { name: 'The report' })).toHaveAttribute('href', 'https://example.com/report.pdf');
  await expect(page.getByText('Embedded notes')).toBeVisible();
  await expect(page.getByText('"total": 42')).toBeVisible();

  const toolError = insert('failed', { content: [{ type: 'text', text: 'Disk full' }], isError: true });
  await page.goto(`/tasks/${toolError}`);
  await expect(page.getByText('The tool reported an error')).toBeVisible();
  await expect(page.getByText('Disk full')).toBeVisible();

  const rpcError = insert('failed', null, { code: -32603, message: 'Internal error: the server restarted' });
  await page.goto(`/tasks/${rpcError}`);
  await expect(page.getByRole('alert').filter({ hasText: 'Error -32603' })).toContainText('Internal error: the server restarted');
});
