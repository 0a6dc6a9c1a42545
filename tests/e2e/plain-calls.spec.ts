import path from 'node:path';
import { expect, signUpWithToken, test } from '../fixtures';
import { connectSdk2Client, RawMcp, SseReader } from '../helpers/mcp';
import type { TestServer } from '../helpers/server';
import { QuestionsPage } from '../pages/questions';
import { TasksPage } from '../pages/tasks';

const screenshots = path.join(__dirname, '..', '..', 'test-results', 'screenshots');

/** The SDK 2.x client with no task (and no elicitation) support: all it can do is call and wait. */
const connectSdk2 = (server: TestServer, token: string) => connectSdk2Client(server.mcpUrl, token);

test('a plain ask_human call waits while the person answers in the dashboard, then returns the answer', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'plain-asker');
  const tasks = new TasksPage(page);
  await tasks.goto();
  const questions = new QuestionsPage(page);
  const sdk = await connectSdk2(server, token);
  try {
    const call = sdk.client.callTool({ name: 'ask_human', arguments: { question: 'Merge the release branch?', choices: ['Merge', 'Wait'] } }, { timeout: 120_000 });

    await expect(questions.inboxCount()).toHaveText('1');
    await questions.openFromInbox('Merge the release branch?');
    await expect(page.getByTestId('plain-call')).toHaveText('Plain call from sdk2-client');
    await expect(page.getByTestId('started-by')).toContainText('A plain tools/call');
    await page.screenshot({ path: path.join(screenshots, 'plain-call-question.png'), fullPage: true });
    await questions.tap('Merge the release branch?', 'Merge');

    const result = await call;
    expect(result.content[0]).toEqual({ type: 'text', text: 'Answer (given in the dashboard): Merge' });
    expect(result.structuredContent).toEqual({ action: 'accept', answeredBy: 'dashboard', content: { answer: 'Merge' } });
    await expect(page.getByText(/^Answered in the dashboard by plain-asker-/)).toBeVisible();
  } finally {
    await sdk.close();
  }
});

test('a plain ask_human call answered "still running" is answered in the dashboard, and task_result returns the answer', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'plain-hasty');
  const tasks = new TasksPage(page);
  await tasks.goto();
  const questions = new QuestionsPage(page);
  const sdk = await connectSdk2Client(server.mcpUrl, token, { name: 'hasty-client' });
  try {
    const first: any = await sdk.client.callTool({ name: 'ask_human', arguments: { question: 'Deploy on Friday?', choices: ['Yes', 'No'] } }, { timeout: 10_000 });
    const { taskId, status } = first.structuredContent;
    expect(status).toBe('input_required');
    expect(first.content[0].text).toContain(`${server.url}/tasks/${taskId}`);

    await questions.openFromInbox('Deploy on Friday?');
    // The timeline says the client was answered and the task goes on.
    await expect(page.getByRole('list', { name: 'Timeline' })).toContainText('The call was answered before the task ended');
    await questions.tap('Deploy on Friday?', 'No');

    let result: any = first;
    while (result.structuredContent?.pollAfterSeconds !== undefined) {
      result = await sdk.client.callTool({ name: 'task_result', arguments: { taskId } }, { timeout: 10_000 });
    }
    expect(result.structuredContent).toEqual({ action: 'accept', answeredBy: 'dashboard', content: { answer: 'No' } });
  } finally {
    await sdk.close();
  }
});

test('a plain delay shows in the dashboard with progress while it works, and its call returns the result', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'plain-delay');
  const tasks = new TasksPage(page);
  await tasks.goto();
  const sdk = await connectSdk2(server, token);
  try {
    const progress: number[] = [];
    const call = sdk.client.callTool({ name: 'delay', arguments: { seconds: 5 } }, { onprogress: (update) => progress.push(update.progress) });
    const row = page.locator('tr[data-task-id]').filter({ hasText: 'delay' });
    await expect(row.getByTestId('plain-call')).toHaveText('Plain call from sdk2-client');
    await expect(row.locator('[data-status="working"]')).toBeVisible();
    await expect(row.getByRole('progressbar')).toHaveAttribute('aria-valuenow', /^(0\.5|1|1\.5|2|2\.5|3|3\.5|4|4\.5)$/);
    await page.screenshot({ path: path.join(screenshots, 'plain-call-list.png'), fullPage: true });

    const result = await call;
    expect(result.content).toEqual([{ type: 'text', text: 'Waited 5 s.' }]);
    expect(progress.at(-1)).toBe(5);
    await expect(row.locator('[data-status="completed"]')).toBeVisible();
  } finally {
    await sdk.close();
  }
});

test('a plain call whose client disconnects half-way still completes in the dashboard', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'plain-drop');
  const tasks = new TasksPage(page);
  await tasks.goto();
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize('2025-11-25');
  const controller = new AbortController();
  const response = await mcp.post(
    { jsonrpc: '2.0', id: 'dropped', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 3 }, _meta: { progressToken: 'd' } } },
    {},
    controller.signal,
  );
  const reader = new SseReader(response);
  let message;
  do message = await reader.nextMessage();
  while (message && message.method !== 'notifications/progress');
  expect(message?.params.progress).toBe(0.5);
  controller.abort();

  const row = page.locator('tr[data-task-id]').filter({ hasText: 'delay' });
  await expect(row.locator('[data-status="completed"]')).toBeVisible({ timeout: 20_000 });
  const taskId = await row.getAttribute('data-task-id');
  await tasks.openTask(taskId!);
  await expect(page.getByText('Waited 3 s.')).toBeVisible();
  await expect(page.getByTestId('plain-call')).toBeVisible();
});
