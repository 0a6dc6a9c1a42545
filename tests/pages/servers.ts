import { expect, type Page } from '@playwright/test';

export class ServersPage {
  constructor(private readonly page: Page) {}

  async goto() {
    await this.page.goto('/servers');
    await expect(this.page.getByRole('heading', { name: 'Servers', exact: true })).toBeVisible();
  }

  /** The card of one server, by its name in the servers file. */
  server(name: string) {
    return this.page.locator(`[data-server="${name}"]`);
  }

  /** Waits until the server is up (the page refreshes itself while one is starting). */
  async expectUp(name: string) {
    await expect(this.server(name).locator('[data-state]')).toHaveAttribute('data-state', 'up', { timeout: 30_000 });
  }

  secretField(name: string) {
    return this.server(name).getByLabel(/^(Your|Replace your) secret$/);
  }

  async saveSecret(name: string, secret: string) {
    await this.secretField(name).fill(secret);
    await this.server(name).getByRole('button', { name: `Save your secret for ${name}` }).click();
  }

  async removeSecret(name: string) {
    await this.server(name).getByRole('button', { name: `Remove your secret for ${name}` }).click();
    await this.server(name).getByRole('button', { name: 'Yes, remove' }).click();
  }
}
