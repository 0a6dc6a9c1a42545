import { expect, type Page } from '@playwright/test';

/** The questions card of a task page and the inbox. */
export class QuestionsPage {
  constructor(private readonly page: Page) {}

  form(message: string) {
    return this.page.getByRole('form', { name: `Answer: ${message}` });
  }

  async submit(message: string, button: 'Submit' | 'Decline' | 'Cancel' = 'Submit') {
    await this.form(message).getByRole('button', { name: button, exact: true }).click();
  }

  /** Answers a question of a few choices with its one-tap button. */
  async tap(message: string, choice: string) {
    await this.form(message).getByRole('button', { name: choice, exact: true }).click();
  }

  inboxCount() {
    return this.page.getByTestId('inbox-count');
  }

  async openFromInbox(message: string) {
    await this.page.getByRole('link', { name: 'Inbox' }).click();
    await expect(this.page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
    await this.page.getByRole('link', { name: `Answer: ${message}` }).click();
    await expect(this.form(message)).toBeVisible();
  }
}
