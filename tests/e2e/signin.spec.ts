import type { Browser, BrowserContext } from '@playwright/test';
import config from '../../playwright.config';
import { expect, password, test, uniqueEmail } from '../fixtures';
import { RawMcp } from '../helpers/mcp';
import { runScript, startServer } from '../helpers/server';
import { AuthPage } from '../pages/auth';
import { TokensPage } from '../pages/tokens';

/**
 * A browser context that may only talk to loopback: a redirect that escapes the origin is recorded (and
 * goes nowhere) instead of reaching the network.
 */
async function loopbackContext(browser: Browser, baseURL: string): Promise<{ context: BrowserContext; escapes: string[] }> {
  const context = await browser.newContext({ baseURL });
  const escapes: string[] = [];
  await context.route(
    (url) => !['localhost', '127.0.0.1'].includes(url.hostname),
    (route) => {
      escapes.push(route.request().url());
      return route.abort();
    },
  );
  return { context, escapes };
}

// Should a redirect escape, Chromium resolves no other host name: not even a DNS query leaves loopback.
const launchOptions = config.use?.launchOptions ?? {};
test.use({
  launchOptions: { ...launchOptions, args: [...(launchOptions.args ?? []), '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1'] },
});

/** Each value as it appears in the query string of /signin. */
const badCallbackQueries = [
  ['/.//evil.com', encodeURIComponent('/.//evil.com')],
  ['//evil.com', encodeURIComponent('//evil.com')],
  ['/\\evil.com', encodeURIComponent('/\\evil.com')],
  ['/%2F%2Fevil.com (raw)', '/%2F%2Fevil.com'],
  ['/%2F%2Fevil.com (literal)', encodeURIComponent('/%2F%2Fevil.com')],
  ['https://evil.com/tasks', encodeURIComponent('https://evil.com/tasks')],
  ['javascript:', encodeURIComponent('javascript:alert(document.domain)')],
] as const;

test.describe('returning after sign-in', () => {
  test('a bad callbackUrl never leaves the origin: signing in lands on the dashboard', async ({ browser, server }) => {
    const email = uniqueEmail('redirect');
    const { context: setup } = await loopbackContext(browser, server.url);
    const setupPage = await setup.newPage();
    await new AuthPage(setupPage).signUp(email, password);
    await setupPage.waitForURL(/\/tasks$/);
    await setup.close();

    for (const [label, query] of badCallbackQueries) {
      const { context, escapes } = await loopbackContext(browser, server.url);
      const page = await context.newPage();
      const dialogs: string[] = [];
      page.on('dialog', (dialog) => (dialogs.push(dialog.message()), void dialog.dismiss()));
      await new AuthPage(page).signIn(email, password, `callbackUrl=${query}`);
      await page.waitForURL((url) => url.pathname === '/tasks', { timeout: 15_000 });
      expect(new URL(page.url()).origin, label).toBe(server.url);
      await expect(page.getByRole('heading', { name: 'Tasks', exact: true })).toBeVisible();

      // Already signed in, the page redirects on the server: the same rule applies there.
      await page.goto(`/signin?callbackUrl=${query}`);
      await page.waitForURL((url) => url.pathname === '/tasks');
      expect(new URL(page.url()).origin, label).toBe(server.url);
      expect(escapes, label).toEqual([]);
      expect(dialogs, label).toEqual([]);
      await context.close();
    }
  });

  test('a same-origin callbackUrl with a query is where signing in lands', async ({ browser, server }) => {
    const email = uniqueEmail('good-redirect');
    const { context, escapes } = await loopbackContext(browser, server.url);
    const page = await context.newPage();
    await new AuthPage(page).signUp(email, password);
    await page.waitForURL(/\/tasks$/);
    await new AuthPage(page).signOut();
    await new AuthPage(page).signIn(email, password, `callbackUrl=${encodeURIComponent('/tasks?status=working')}`);
    await page.waitForURL((url) => url.pathname === '/tasks' && url.search === '?status=working');
    expect(escapes).toEqual([]);
    await context.close();
  });
});

test('“Sign out everywhere” ends the same person’s session in another browser', async ({ browser, server }) => {
  const email = uniqueEmail('everywhere');
  const laptop = await browser.newContext({ baseURL: server.url });
  const phone = await browser.newContext({ baseURL: server.url });
  const laptopPage = await laptop.newPage();
  const phonePage = await phone.newPage();
  await new AuthPage(laptopPage).signUp(email, password);
  await laptopPage.waitForURL(/\/tasks$/);
  await new AuthPage(phonePage).signIn(email, password);
  await phonePage.waitForURL(/\/tasks$/);

  await laptopPage.getByRole('button', { name: 'Sign out everywhere' }).click();
  const confirm = laptopPage.getByRole('group', { name: 'Confirm: Sign out everywhere' });
  await expect(confirm.getByText('Every browser signed in as you is signed out, this one included.')).toBeVisible();
  await expect(confirm.getByText('Clients using your access tokens and connected apps keep working.')).toBeVisible();
  await expect(confirm.getByText('Browsers told of your tasks stop with their sessions; webhooks and e-mail keep being sent.')).toBeVisible();
  await confirm.getByRole('button', { name: 'Sign out everywhere' }).click();
  await laptopPage.waitForURL(/\/signin/);

  await phonePage.goto('/tokens');
  await expect(phonePage).toHaveURL(/\/signin\?callbackUrl=%2Ftokens&reason=expired/);
  await expect(phonePage.getByRole('status').filter({ hasText: 'Your session has expired' })).toBeVisible();

  // Signing in again works, and starts a session that is valid again.
  await new AuthPage(phonePage).signIn(email, password);
  await phonePage.waitForURL(/\/tasks$/);
  await laptop.close();
  await phone.close();
});

test('“Sign out everywhere” can revoke access tokens and remove webhooks too, and says so before it does', async ({ page, server }) => {
  const email = uniqueEmail('everything');
  await new AuthPage(page).signUp(email, password);
  await page.waitForURL(/\/tasks$/);
  const tokens = new TokensPage(page);
  await tokens.goto();
  const token = await tokens.create('laptop client');
  const client = new RawMcp(server.mcpUrl, token);
  await client.initialize();
  const stream = await client.openGetStream();
  await stream.next();

  await page.getByRole('button', { name: 'Sign out everywhere' }).click();
  const confirm = page.getByRole('group', { name: 'Confirm: Sign out everywhere' });
  await confirm.getByRole('checkbox', { name: 'Also revoke my access tokens and disconnect my apps' }).check();
  await expect(confirm.getByText('Every client using them stops at once, and has to be given a new token or connected again.')).toBeVisible();
  expect(runScript(server, 'webhook', ['add', '--url', 'https://hooks.example.com/everything', '--email', email]).status).toBe(0);
  const webhooks = () => server.db().prepare("SELECT count(*) AS n FROM notification_targets t JOIN users u ON u.id = t.user_id WHERE u.email = ?").get(email);
  expect(webhooks()).toEqual({ n: 1 });
  await confirm.getByRole('checkbox', { name: 'Also remove my webhooks and e-mail notifications' }).check();
  await expect(confirm.getByText('Nothing is told of your tasks until you set it up again under Notifications, your preferences included.')).toBeVisible();
  await confirm.getByRole('button', { name: 'Sign out everywhere' }).click();
  await page.waitForURL(/\/signin/);
  expect(webhooks()).toEqual({ n: 0 });
  // The client's open stream ends at once, not at the next periodic check of its token.
  expect(await stream.next(1_000)).toBeNull();
  expect((await client.request('ping')).status).toBe(401);
});

test('too many attempts: the sign-in and sign-up forms say how long to wait', async ({ page }) => {
  const throttled = await startServer({ SIGNIN_MAX_PER_ACCOUNT: '2', SIGNUP_MAX_PER_IP: '2' });
  try {
    const auth = new AuthPage(page);
    const email = uniqueEmail('throttled');
    await page.goto(`${throttled.url}/signup`);
    for (const address of [email, uniqueEmail('second')]) {
      await page.goto(`${throttled.url}/signup`);
      await page.getByLabel('Email').fill(address);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL(/\/tasks$/);
      await auth.signOut();
    }
    await page.goto(`${throttled.url}/signup`);
    await page.getByLabel('Email').fill(uniqueEmail('third'));
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await expect(page.getByRole('alert').filter({ hasText: /^Too many attempts, try again in \d+ s\.$/ })).toBeVisible();

    await page.goto(`${throttled.url}/signin`);
    await page.getByLabel('Email').fill(email);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      await page.getByLabel('Password').fill(`not the password ${attempt}`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page.getByRole('alert').filter({ hasText: 'Wrong email or password.' })).toBeVisible();
      await expect(page.getByRole('button', { name: 'Sign in' })).toBeEnabled();
    }
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').filter({ hasText: /^Too many attempts, try again in \d+ s\.$/ })).toBeVisible();
    await expect(page).toHaveURL(/\/signin$/);
  } finally {
    await throttled.stop();
  }
});
