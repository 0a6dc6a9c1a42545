import type { Page } from '@playwright/test';

export class AuthPage {
  constructor(private readonly page: Page) {}

  async signUp(email: string, password: string, name = 'Test User') {
    await this.page.goto('/signup');
    await this.page.getByLabel('Name (optional)').fill(name);
    await this.page.getByLabel('Email').fill(email);
    await this.page.getByLabel('Password').fill(password);
    await this.page.getByRole('button', { name: 'Create account' }).click();
  }

  /** `query` is the sign-in page's query string as written in the address bar (such as `callbackUrl=%2Finbox`). */
  async signIn(email: string, password: string, query = '') {
    await this.page.goto(query ? `/signin?${query}` : '/signin');
    await this.page.getByLabel('Email').fill(email);
    await this.page.getByLabel('Password').fill(password);
    await this.page.getByRole('button', { name: 'Sign in' }).click();
  }

  async signOut() {
    await this.page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await this.page.waitForURL(/\/signin/);
  }
}
