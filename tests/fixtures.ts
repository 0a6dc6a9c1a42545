import { test as base } from '@playwright/test';
import { startServer, type TestServer } from './helpers/server';

/** Every browser test file gets its own real server and database. */
export const test = base.extend<{ baseURL: string }, { server: TestServer }>({
  server: [
    async ({}, use) => {
      // Every browser test signs up and in from 127.0.0.1: the per-address throttles would count them all.
      const server = await startServer({ SIGNIN_MAX_PER_IP: '100000', SIGNUP_MAX_PER_IP: '100000' });
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
