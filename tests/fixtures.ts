import { test as base, type Page } from '@playwright/test';
import { AuthPage } from './pages/auth';
import { TokensPage } from './pages/tokens';
import { startServer, type TestServer } from './helpers/server';

/** Every browser test file gets its own real server and database. */
export const test = base.extend<{ baseURL: string }, { server: TestServer }>({
  server: [
    async ({}, use) => {
      // Every browser test signs up and in from 127.0.0.1: the per-address throttles would count them all.
      // A client named hasty-client is answered "still running" after 1.5 s instead of 45.
      const server = await startServer({ SIGNIN_MAX_PER_IP: '100000', SIGNUP_MAX_PER_IP: '100000', CALL_ANSWER_WITHIN_MS_BY_CLIENT: 'hasty-client=1500' });
      await use(server);
      await server.stop();
    },
    { scope: 'worker', timeout: 90_000 },
  ],
  baseURL: async ({ server }, use) => {
    await use(server.url);
  },
});

export { expect } from '@playwright/test';

let counter = 0;
/** A fresh email for each account a test makes. */
export const uniqueEmail = (label: string) => `${label}-${Date.now().toString(36)}-${(counter += 1)}@example.com`;
export const password = 'correct horse battery staple';

/** Signs a new person up (and so in), and makes them an access token for an MCP client; resolves with the token. */
export async function signUpWithToken(page: Page, label: string): Promise<string> {
  await new AuthPage(page).signUp(uniqueEmail(label), password);
  await page.waitForURL(/\/tasks$/);
  const tokens = new TokensPage(page);
  await tokens.goto();
  return tokens.create(`${label}-token`);
}

/** The browser tests of a file whose server needs settings of its own: a server per test, and its URL as baseURL. */
export function testWithServer(env: Record<string, string>) {
  return test.extend<{ ownServer: TestServer }>({
    ownServer: async ({}, use) => {
      const server = await startServer({ SIGNIN_MAX_PER_IP: '100000', SIGNUP_MAX_PER_IP: '100000', ...env });
      await use(server);
      await server.stop();
    },
    baseURL: async ({ ownServer }, use) => {
      await use(ownServer.url);
    },
  });
}
