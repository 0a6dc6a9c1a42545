import { expect, test } from '@playwright/test';
import { queryRows, startEmbeddedServer } from '../helpers/postgres';
import { startServer } from '../helpers/server';
import { AuthPage } from '../pages/auth';
import { password, uniqueEmail } from '../fixtures';

/**
 * PostgreSQL stopped under a running server (a PostgreSQL of this test's own, since stopping a shared one
 * would fail every other suite): a dashboard page says why it cannot be shown, instead of an error page or
 * a false "your session has expired", and comes back when asked once PostgreSQL is back.
 */
test('while the database cannot be reached, a page says so and offers to try again, which works once it is back', async ({ browser }) => {
  test.setTimeout(120_000);
  const postgres = await startEmbeddedServer();
  try {
    await queryRows(postgres.adminUrl, 'CREATE DATABASE dashboard');
    const url = new URL(postgres.adminUrl);
    url.pathname = '/dashboard';
    const server = await startServer({ DATABASE_URL: url.toString() });
    const context = await browser.newContext({ baseURL: server.url });
    try {
      const page = await context.newPage();
      await new AuthPage(page).signUp(uniqueEmail('outage'), password);
      await page.waitForURL(/\/tasks$/);
      await expect(page.getByRole('heading', { name: 'Tasks', exact: true })).toBeVisible();

      await postgres.pause();
      await page.goto('/inbox');
      const alert = page.getByTestId('storage-banner');
      await expect(alert).toContainText('This page could not be shown.', { timeout: 20_000 });
      await expect(alert).toContainText('The database cannot be reached right now', { timeout: 20_000 });
      expect(page.url()).toBe(`${server.url}/inbox`);

      await postgres.resume();
      await page.getByRole('button', { name: 'Try again' }).click();
      await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible({ timeout: 20_000 });
      await expect(alert).toHaveCount(0);
    } finally {
      await context.close();
      await server.stop();
    }
  } finally {
    await postgres.stop();
  }
});
