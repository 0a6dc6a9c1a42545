import { Webhook } from 'standardwebhooks';
import { expect, password, test as base, uniqueEmail } from '../fixtures';
import { RawMcp } from '../helpers/mcp';
import { MailSink, PushService, readMail, WebhookReceiver } from '../helpers/receivers';
import { callServerAction } from '../helpers/dashboard';
import { startServer, type TestServer } from '../helpers/server';
import { AuthPage } from '../pages/auth';
import { TokensPage } from '../pages/tokens';

/** This file's server may deliver to the loopback receiver, retries fast and mails a local sink. */
const test = base.extend<{ notifying: { server: TestServer; receiver: WebhookReceiver; mail: MailSink; pushService: PushService } }>({
  notifying: async ({}, use) => {
    const receiver = new WebhookReceiver();
    const mail = new MailSink();
    const pushService = new PushService();
    await receiver.start();
    await mail.start();
    await pushService.start();
    const server = await startServer({
      SIGNIN_MAX_PER_IP: '100000',
      SIGNUP_MAX_PER_IP: '100000',
      NOTIFY_PRIVATE_HOSTS: '127.0.0.1',
      NOTIFY_RETRY_BASE_MS: '100',
      NOTIFY_RETRY_WINDOW_MS: '2000',
      SMTP_URL: `smtp://127.0.0.1:${mail.port}`,
    });
    await use({ server, receiver, mail, pushService });
    await server.stop();
    await receiver.stop();
    await mail.stop();
    await pushService.stop();
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

  // Signing up proved nothing: e-mail waits for the address to be confirmed with a link sent to it.
  await page.goto('/notifications');
  await expect(page.getByText(`Sent to ${email}`)).toHaveCount(0);
  await page.getByRole('button', { name: 'Send confirmation link' }).click();
  await expect(page.getByRole('status').filter({ hasText: `Sent to ${email}: open the link in it.` })).toBeVisible();
  await expect.poll(() => mail.messages.filter((message) => message.to.includes(email)).length).toBe(1);
  const confirmation = readMail(mail.messages.find((entry) => entry.to.includes(email))!.raw);
  await page.goto(/Confirm that it is yours: (\S+)/.exec(confirmation.text)![1]);
  await expect(page.getByRole('status').filter({ hasText: `${email} is confirmed` })).toBeVisible();
  await page.getByRole('link', { name: 'Go to Notifications' }).click();
  await expect(page.getByText(`Sent to ${email}`)).toBeVisible();
  await expect(page.getByRole('button', { name: 'Send confirmation link' })).toHaveCount(0);
  await page.locator('#email-task\\.input_required').check();
  await page.getByRole('button', { name: 'Save e-mail choices' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Saved.' })).toBeVisible();

  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Approve the invoice?' }, task: {} });
  await expect.poll(() => mail.messages.filter((message) => message.to.includes(email)).length).toBe(2);
  const message = readMail(mail.messages.filter((entry) => entry.to.includes(email))[1].raw);
  expect(message.subject).toBe('“ask_human” asks: Approve the invoice?');
  const link = /Answer it here: (\S+)/.exec(message.text)![1];
  expect(link).toBe(`${server.url}/tasks/${task.taskId}`);
  await page.goto(link);
  await expect(page.getByText('Approve the invoice?').first()).toBeVisible();
});

test('a question pushed to this browser shows in the open page, or as a notification that opens the task', async ({ page, notifying }) => {
  const { server, pushService } = notifying;
  await page.context().grantPermissions(['notifications'], { origin: server.url });
  await new AuthPage(page).signUp(uniqueEmail('push'), password);
  await page.waitForURL(/\/tasks$/);
  const tokens = new TokensPage(page);
  await tokens.goto();
  const token = await tokens.create('push');

  await page.goto('/notifications');
  await page.getByRole('button', { name: 'Notify this browser' }).click();
  // The service worker is registered either way; this machine's Chromium cannot reach a real push service,
  // so it says so, and the subscription the server pushes to is the stand-in's.
  await expect(page.getByText(/This browser will be told\.|could not subscribe with its push service/)).toBeVisible();
  expect(await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.scriptURL)).toBe(`${server.url}/sw.js`);
  const cookie = (await page.context().cookies()).map((entry) => `${entry.name}=${entry.value}`).join('; ');
  const subscribed = await callServerAction(server, {
    page: '/notifications',
    filename: 'app/(dashboard)/notifications/actions.ts',
    exportedName: 'subscribeBrowserAction',
    body: JSON.stringify([pushService.subscribe('chromium'), ['task.input_required', 'task.completed'], 'Chrome on Linux']),
    cookie,
  });
  expect(subscribed.status).toBe(200);
  await page.reload();
  await expect(page.getByRole('list', { name: 'Subscribed browsers' })).toContainText('Chrome on Linux');

  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Roll back the deploy?' }, task: {} });
  await expect.poll(() => pushService.for('chromium').length).toBe(1);
  const payload = pushService.for('chromium')[0].payload;

  const cdp = await page.context().newCDPSession(page);
  const registrations: Array<{ registrationId: string; scopeURL: string }> = [];
  cdp.on('ServiceWorker.workerRegistrationUpdated', (event) => registrations.push(...event.registrations));
  await cdp.send('ServiceWorker.enable');
  await expect.poll(() => registrations.find((entry) => entry.scopeURL === `${server.url}/`)).toBeTruthy();
  const registrationId = registrations.find((entry) => entry.scopeURL === `${server.url}/`)!.registrationId;

  const isOurs = (entry: { url(): string }) => entry.url() === `${server.url}/sw.js`;
  const worker = page.context().serviceWorkers().find(isOurs) ?? (await page.context().waitForEvent('serviceworker', isOurs));
  const notifications = () =>
    worker.evaluate(async () => (await (self as any).registration.getNotifications()).map((entry: any) => ({ title: entry.title, body: entry.body, tag: entry.tag, data: entry.data })));
  // Chromium's getNotifications() drops a notification it is asked about while the system has yet to put it
  // on display (it takes it for one closed meanwhile): the notifications are looked at only once the worker
  // has shown them, which it counts here.
  await worker.evaluate(() => {
    const scope = self as any;
    const show = scope.registration.showNotification.bind(scope.registration);
    scope.notificationsShown = 0;
    scope.registration.showNotification = async (...args: unknown[]) => {
      await show(...args);
      scope.notificationsShown += 1;
    };
  });
  const notificationsShown = () => worker.evaluate(() => (self as any).notificationsShown as number);

  // A dashboard page is open and visible: the question shows in it, not as a system notification. The page
  // shows pushes once it runs (it is live by then).
  await page.goto('/tasks');
  await expect(page.locator('[data-live-mode="live"]')).toBeVisible();
  await cdp.send('ServiceWorker.deliverPushMessage', { origin: server.url, registrationId, data: payload });
  const shown = page.locator(`[data-push-message="${task.taskId}"]`);
  await expect(shown).toContainText('ask_human needs you');
  await expect(shown).toContainText('Roll back the deploy?');
  expect(await notificationsShown()).toBe(0);
  expect(await notifications()).toEqual([]);
  await shown.getByRole('link', { name: 'Answer it' }).click();
  await page.waitForURL(`${server.url}/tasks/${task.taskId}`);

  // No dashboard page open (the one left may still be going away as the push comes): a notification, which
  // opens the task's page when clicked.
  await page.goto('about:blank');
  await cdp.send('ServiceWorker.deliverPushMessage', { origin: server.url, registrationId, data: payload });
  await expect.poll(notificationsShown).toBe(1);
  expect(await notifications()).toEqual([{ title: 'ask_human needs you', body: 'Roll back the deploy?', tag: task.taskId, data: { url: `${server.url}/tasks/${task.taskId}` } }]);
  // Only a real click on a system notification may open a window (Chromium refuses one from a dispatched
  // event, and nothing here can click a system notification), so the window the handler opens is recorded.
  const openedUrl = await worker.evaluate(async () => {
    const scope = self as any;
    let opened: string | undefined;
    scope.clients.openWindow = async (url: string) => {
      opened = url;
      return null;
    };
    const [notification] = await scope.registration.getNotifications();
    const click = new scope.NotificationEvent('notificationclick', { notification });
    scope.dispatchEvent(click);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return opened;
  });
  expect(openedUrl).toBe(`${server.url}/tasks/${task.taskId}`);
  expect(await notifications()).toEqual([]);

  // A visible page of the origin that does not show pushes (here the worker's own script) says nothing when
  // handed one: it comes as a notification all the same.
  await page.goto('/sw.js');
  await cdp.send('ServiceWorker.deliverPushMessage', { origin: server.url, registrationId, data: payload });
  await expect.poll(notificationsShown).toBe(2);
  expect(await notifications()).toEqual([{ title: 'ask_human needs you', body: 'Roll back the deploy?', tag: task.taskId, data: { url: `${server.url}/tasks/${task.taskId}` } }]);
});

test('signing out unsubscribes this browser, and the server forgets it', async ({ page, notifying }) => {
  const { server, pushService } = notifying;
  await page.context().grantPermissions(['notifications'], { origin: server.url });
  await new AuthPage(page).signUp(uniqueEmail('leaving'), password);
  await page.waitForURL(/\/tasks$/);
  await page.goto('/notifications');
  await page.getByRole('button', { name: 'Notify this browser' }).click();
  await expect(page.getByText(/This browser will be told\.|could not subscribe with its push service/)).toBeVisible();
  const subscription = pushService.subscribe('leaving');
  const cookie = (await page.context().cookies()).map((entry) => `${entry.name}=${entry.value}`).join('; ');
  const subscribed = await callServerAction(server, {
    page: '/notifications',
    filename: 'app/(dashboard)/notifications/actions.ts',
    exportedName: 'subscribeBrowserAction',
    body: JSON.stringify([subscription, ['task.input_required'], 'Chrome on Linux']),
    cookie,
  });
  expect(subscribed.status).toBe(200);
  // This machine's Chromium reaches no push service, so the subscription the server holds is the
  // stand-in's: the browser is made to answer with it, and its unsubscribe() leaves a mark that outlives
  // the page.
  await page.addInitScript((endpoint) => {
    PushManager.prototype.getSubscription = async () =>
      ({
        endpoint,
        unsubscribe: async () => {
          localStorage.setItem('unsubscribed', endpoint);
          return true;
        },
      }) as unknown as PushSubscription;
  }, subscription.endpoint);
  await page.reload();
  await expect(page.getByRole('list', { name: 'Subscribed browsers' })).toContainText('this browser');

  await new AuthPage(page).signOut();
  expect(await page.evaluate(() => localStorage.getItem('unsubscribed'))).toBe(subscription.endpoint);
  expect(server.db().prepare("SELECT count(*) AS n FROM notification_targets WHERE channel = 'push'").get()).toEqual({ n: 0 });
});
