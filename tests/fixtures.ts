import { test as base } from '@playwright/test';
import { startServer, type TestServer } from './helpers/server';

/** Every browser test file gets its own real server and database. */
export const test = base.extend<{ baseURL: string }, { server: TestServer }>({
  server: [
    async ({}, use) => {
      const server = await startServer();
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
