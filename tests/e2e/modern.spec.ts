import path from 'node:path';
import { expect, signUpWithToken, test } from '../fixtures';
import { RawMcp } from '../helpers/mcp';
import { ModernMcp, modernVersion, tasksExtension } from '../helpers/modern';
import { QuestionsPage } from '../pages/questions';
import { TasksPage } from '../pages/tasks';

const screenshots = path.join(__dirname, '..', '..', 'test-results', 'screenshots');

test('a 2026-07-28 task and a 2025-11-25 task side by side; the person answers the modern one, and its client reads the answer', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'two-eras');
  const tasks = new TasksPage(page);
  await tasks.goto();

  const legacy = new RawMcp(server.mcpUrl, token);
  await legacy.initialize('2025-11-25');
  await legacy.call('tools/call', { name: 'delay', arguments: { seconds: 60 }, task: {} });

  const modern = new ModernMcp(server.mcpUrl, token, { extensions: { [tasksExtension]: {} } }, { name: 'modern-agent', version: '3.1' });
  const created = await modern.call('tools/call', { name: 'ask_human', arguments: { question: 'Ship the modern build?', choices: ['Ship', 'Hold'] } });
  expect(created.resultType).toBe('task');

  const modernRow = page.locator(`tr[data-task-id="${created.taskId}"]`);
  await expect(modernRow.getByTestId('protocol-era')).toHaveText(`MCP ${modernVersion}`);
  const legacyRow = page.locator('tr[data-task-id]').filter({ hasText: 'delay' });
  await expect(legacyRow.getByTestId('protocol-era')).toHaveText('MCP 2025-11-25');
  await page.screenshot({ path: path.join(screenshots, 'two-eras-list.png'), fullPage: true });

  const questions = new QuestionsPage(page);
  await expect(questions.inboxCount()).toHaveText('1');
  await questions.openFromInbox('Ship the modern build?');
  await expect(page.getByTestId('protocol')).toContainText(`MCP ${modernVersion}: stateless`);
  await expect(page.getByTestId('started-by')).toContainText('tasks extension');
  await questions.tap('Ship the modern build?', 'Ship');

  await expect
    .poll(async () => (await modern.call('tasks/get', { taskId: created.taskId })).status, { timeout: 20_000 })
    .toBe('completed');
  const done = await modern.call('tasks/get', { taskId: created.taskId });
  expect(done.result.content[0]).toEqual({ type: 'text', text: 'Answer (given in the dashboard): Ship' });
  // The client's own answer comes too late: the person's was first.
  await modern.call('tasks/update', { taskId: created.taskId, inputResponses: { answer: { action: 'accept', content: { answer: 'Hold' } } } });
  expect((await modern.call('tasks/get', { taskId: created.taskId })).result.content[0].text).toContain('Ship');
  await expect(page.getByText(/^Answered in the dashboard by two-eras-/)).toBeVisible();
});
