import type { Page } from '@playwright/test';
import { expect, signUpWithToken, test } from '../fixtures';
import { axeViolationsEverywhere, phone } from '../helpers/axe';
import { RawMcp } from '../helpers/mcp';
import { QuestionsPage } from '../pages/questions';

/** Presses Tab until the focused element is `target`, as a person without a mouse does. */
async function tabTo(page: Page, target: ReturnType<Page['locator']>, most = 60): Promise<void> {
  for (let presses = 0; presses < most; presses++) {
    await page.keyboard.press('Tab');
    if (await target.evaluate((element) => element === document.activeElement)) return;
  }
  throw new Error(`${most} presses of Tab never reached ${target}`);
}

test('every dashboard page passes axe-core in light and dark, at phone and desktop sizes', async ({ page, server, browser }) => {
  test.setTimeout(300_000);
  const token = await signUpWithToken(page, 'axe');
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const asking = (await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Approve?', choices: ['Yes', 'No'] }, task: {} })).task;
  const form = (await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Details?', fields: { note: { type: 'string', title: 'Note' }, urgent: { type: 'boolean' } } }, task: {} })).task;
  const done = await mcp.startDelayTask(0);
  await expect.poll(async () => (await mcp.call('tasks/get', { taskId: done.taskId })).status).toBe('completed');
  const signedIn = ['/tasks', '/inbox', `/tasks/${asking.taskId}`, `/tasks/${form.taskId}`, `/tasks/${done.taskId}`, '/servers', '/tokens', '/apps', '/notifications', '/connect'];
  const signedOut = await browser.newContext({ baseURL: server.url });
  const outPage = await signedOut.newPage();
  const found: string[] = [];
  for (const [where, paths] of [
    [page, signedIn],
    [outPage, ['/signin', '/signup']],
  ] as const) {
    for (const path of paths) {
      await where.goto(path);
      found.push(...(await axeViolationsEverywhere(where, path)));
    }
  }
  await signedOut.close();
  expect(found).toEqual([]);
});

test('on a phone, by keyboard alone, a yes/no question is answered from the inbox in one press', async ({ page, server }) => {
  await page.setViewportSize(phone);
  const token = await signUpWithToken(page, 'phone');
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Restart the database?', choices: ['Yes', 'No'] }, task: {} });

  await page.goto('/inbox');
  const link = page.getByRole('link', { name: 'Answer: Restart the database?' });
  await expect(link).toBeVisible();
  await tabTo(page, link);
  await page.keyboard.press('Enter');
  await page.waitForURL(`**/tasks/${task.taskId}`);
  const questions = new QuestionsPage(page);
  const yes = questions.form('Restart the database?').getByRole('button', { name: 'Yes', exact: true });
  await expect(yes).toBeVisible();
  // Nothing on the page is wider than the phone.
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(phone.width);
  await tabTo(page, yes);
  await page.keyboard.press('Enter');
  await expect(page.getByText(/^Answered in the dashboard/)).toBeVisible();
  const result = await mcp.call('tasks/result', { taskId: task.taskId });
  expect(result.content[0].text).toBe('Answer (given in the dashboard): Yes');
});
