import { Webhook } from 'standardwebhooks';
import { expect, password, test as base, uniqueEmail } from '../fixtures';
import { RawMcp } from '../helpers/mcp';
import { MailSink, readMail, WebhookReceiver } from '../helpers/receivers';
import { startServer, type TestServer } from '../helpers/server';
import { AuthPage } from '../pages/auth';
import { TokensPage } from '../pages/tokens';

/** This file's server may deliver to the loopback receiver, retries fast and mails a local sink. */
const test = base.extend<{ notifying: { server: TestServer; receiver: WebhookReceiver; mail: MailSink } }>({
  notifying: async ({}, use) => {
    const receiver = new WebhookReceiver();
    const mail = new MailSink();
    await receiver.start();
    await mail.start();
    const server = await startServer({
      SIGNIN_MAX_PER_IP: '100000',
      SIGNUP_MAX_PER_IP: '100000',
      NOTIFY_PRIVATE_HOSTS: '127.0.0.1',
      NOTIFY_RETRY_BASE_MS: '100',
      NOTIFY_RETRY_WINDOW_MS: '2000',
      SMTP_URL: `smtp://127.0.0.1:${mail.port}`,
    });
    await use({ server, receiver, mail });
    await server.stop();
    await receiver.stop();
    await mail.stop();
  },
  baseURL: async ({ notifying }, use) => {
    await use(notifying.server.url);
  },
});

test('a person adds a webhook, tests it, sees it fail and resumes it, all in the browser', async ({ page, notifying }) => {
  const { server, receiver } = notifying;
  const email = uniqueEmail('hooks');
  await new AuthPage(page).signUp(email, password);
  await page.waitForURL(/\/tasks$/);
  const tokens = new TokensPage(page);
  await tokens.goto();
  const token = await tokens.create('hooks');

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Notifications' }).click();
  await expect(page.getByRole('heading', { name: 'Notifications' })).toBeVisible();
  // A private address is refused with the reason, and nothing is added.
  await page.getByLabel('Endpoint URL').fill('https://10.0.0.7/hooks');
  await page.getByRole('button', { name: 'Add webhook' }).click();
  await expect(page.getByText('10.0.0.7 is a private, loopback or link-local address')).toBeVisible();
  await expect(page.getByText('No webhooks yet.')).toBeVisible();

  let down = false;
  receiver.answer('/browser', () => (down ? { status: 503 } : { status: 200 }));
  const url = receiver.url('/browser');
  await page.getByLabel('Endpoint URL').fill(url);
  // Only ends: the question box is unticked.
  const addForm = page.locator('section', { has: page.getByRole('heading', { name: 'Add a webhook' }) });
  await addForm.getByRole('checkbox', { name: /A task asks me a question/ }).uncheck();
  await page.getByRole('button', { name: 'Add webhook' }).click();
  const secret = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
  expect(secret).toMatch(/^whsec_/);
  const listed = page.locator(`[data-webhook="${url}"]`);
  await expect(listed.getByText('task.completed, task.failed, task.cancelled, task.expired')).toBeVisible();

  await listed.getByRole('button', { name: `Send a test event to ${url}` }).click();
  await expect(listed.getByText('Delivered: HTTP 200')).toBeVisible();
  const hook = new Webhook(secret);
  expect((hook.verify(receiver.at('/browser')[0].body, receiver.at('/browser')[0].headers) as { type: string }).type).toBe('webhook.test');

  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const task = await mcp.startDelayTask(0);
  await expect.poll(() => receiver.at('/browser').length).toBe(2);
  expect(hook.verify(receiver.at('/browser')[1].body, receiver.at('/browser')[1].headers)).toMatchObject({ type: 'task.completed', data: { taskId: task.taskId } });
  await page.reload();
  await expect(listed.getByRole('table')).toContainText('task.completed');

  down = true;
  const failed = await mcp.startDelayTask(0);
  // The next page the person opens says so.
  await expect(async () => {
    await page.goto('/tasks');
    await expect(page.getByRole('alert').filter({ hasText: 'A webhook of yours is failing' })).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 15_000 });
  await page.getByRole('link', { name: 'See and resume it' }).click();
  await expect(listed.getByText(/Failing since .*HTTP 503/)).toBeVisible();
  down = false;
  await listed.getByRole('button', { name: `Resume ${url}` }).click();
  await expect(listed.getByText('Resumed: delivery starts again from the event that failed.')).toBeVisible();
  await expect.poll(() => receiver.at('/browser').map((request) => (hook.verify(request.body, request.headers) as { data: { taskId?: string } }).data.taskId)).toContain(failed.taskId);
  await page.reload();
  await expect(page.getByText('A webhook of yours is failing')).toHaveCount(0);

  await listed.getByRole('button', { name: `Remove webhook ${url}` }).click();
  await listed.getByRole('button', { name: 'Yes, remove' }).click();
  await expect(page.getByText('No webhooks yet.')).toBeVisible();
});

test('a person turns on e-mail for questions and gets one that links to the task', async ({ page, notifying }) => {
  const { server, mail } = notifying;
  const email = uniqueEmail('mail');
  await new AuthPage(page).signUp(email, password);
  await page.waitForURL(/\/tasks$/);
  const tokens = new TokensPage(page);
  await tokens.goto();
  const token = await tokens.create('mail');

  await page.goto('/notifications');
  await expect(page.getByText(`Sent to ${email}`)).toBeVisible();
  await page.locator('#email-task\\.input_required').check();
  await page.getByRole('button', { name: 'Save e-mail choices' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Saved.' })).toBeVisible();

  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Approve the invoice?' }, task: {} });
  await expect.poll(() => mail.messages.filter((message) => message.to.includes(email)).length).toBe(1);
  const message = readMail(mail.messages.find((entry) => entry.to.includes(email))!.raw);
  expect(message.subject).toBe('“ask_human” asks: Approve the invoice?');
  const link = /Answer it here: (\S+)/.exec(message.text)![1];
  expect(link).toBe(`${server.url}/tasks/${task.taskId}`);
  await page.goto(link);
  await expect(page.getByText('Approve the invoice?').first()).toBeVisible();
});
