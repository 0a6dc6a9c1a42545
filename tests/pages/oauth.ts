import { expect, type Page } from '@playwright/test';

export class ConsentPage {
  constructor(private readonly page: Page) {}

  get identity() {
    return this.page.getByTestId('client-identity');
  }

  get redirectHost() {
    return this.page.getByTestId('redirect-host');
  }

  async expectClient(name: string) {
    await expect(this.page.getByRole('heading', { name: `Connect ${name}?` })).toBeVisible();
  }

  async allow() {
    await this.page.getByRole('button', { name: 'Allow' }).click();
  }

  async deny() {
    await this.page.getByRole('button', { name: 'Deny' }).click();
  }
}

export class ConnectedAppsPage {
  constructor(
    private readonly page: Page,
    private readonly baseUrl: string,
  ) {}

  async goto() {
    await this.page.goto(`${this.baseUrl}/apps`);
    await expect(this.page.getByRole('heading', { name: 'Connected apps' })).toBeVisible();
  }

  row(name: string) {
    return this.page.locator(`tr[data-app-name="${name}"]`);
  }

  async disconnect(name: string) {
    await this.page.getByRole('button', { name: `Disconnect ${name}` }).click();
    await this.page.getByRole('button', { name: 'Yes, disconnect' }).click();
  }
}
