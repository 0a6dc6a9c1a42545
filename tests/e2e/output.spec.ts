import { expect, signUpWithToken, testWithServer } from '../fixtures';
import { RawMcp } from '../helpers/mcp';

const test = testWithServer({ MCP_FIXTURE_TOOLS: '1' });

test('a tool’s partial output shows live on its task’s page while it runs, and stays when it ends', async ({ page, ownServer }) => {
  const token = await signUpWithToken(page, 'output');
  const mcp = new RawMcp(ownServer.mcpUrl, token);
  await mcp.initialize();
  const { task } = await mcp.call('tools/call', { name: 'fixture_partial_output', arguments: { lines: 12, pauseMs: 500 }, task: {} });
  await page.goto(`/tasks/${task.taskId}`);
  const output = page.getByTestId('partial-output');
  await expect(page.getByRole('heading', { name: 'Output so far' })).toBeVisible();
  await expect(output).toContainText('line 2');
  // More arrives while the page stays open, without a reload.
  await expect(output).toContainText('line 6');
  expect((await mcp.call('tasks/get', { taskId: task.taskId })).status).toBe('working');
  await expect(output).toContainText('line 12', { timeout: 15_000 });
  await expect(page.getByRole('heading', { name: 'Output', exact: true })).toBeVisible();
  await expect(page.getByText('Wrote 12 lines and 0 chunks.')).toBeVisible();
});
