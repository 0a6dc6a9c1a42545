import { expect, type Page } from '@playwright/test';

export class TokensPage {
  constructor(private readonly page: Page) {}

  async goto() {
    await this.page.goto('/tokens');
    await expect(this.page.getByRole('heading', { name: 'Access tokens' })).toBeVisible();
  }

  /** Creates a token and returns it, read from the read-only "New token" field. */
  async create(name: string, expires = 'never'): Promise<string> {
    await this.page.getByLabel('Token name').fill(name);
    await this.page.getByLabel('Expires').selectOption(expires);
    await this.page.getByRole('button', { name: 'Create token' }).click();
    const field = this.page.getByRole('textbox', { name: 'New token', exact: true });
    await expect(field).toHaveValue(/^mcp_pat_/);
    return field.inputValue();
  }

  row(name: string) {
    return this.page.locator(`tr[data-token-name="${name}"]`);
  }

  async revoke(name: string) {
    await this.page.getByRole('button', { name: `Revoke token ${name}` }).click();
    await this.page.getByRole('button', { name: 'Yes, revoke' }).click();
    await expect(this.row(name).getByText('Revoked')).toBeVisible();
  }
}
