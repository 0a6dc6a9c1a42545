import { expect, type Page } from '@playwright/test';

export class TasksPage {
  constructor(private readonly page: Page) {}

  async goto() {
    await this.page.goto('/tasks');
    await expect(this.page.getByRole('heading', { name: 'Tasks', exact: true })).toBeVisible();
    await expect(this.page.locator('[data-live-mode="live"]')).toBeVisible();
  }

  row(taskId: string) {
    return this.page.locator(`tr[data-task-id="${taskId}"]`);
  }

  async openTask(taskId: string) {
    await this.page.goto(`/tasks/${taskId}`);
  }

  async cancelOpenTask() {
    await this.page.getByRole('button', { name: 'Cancel task' }).click();
    await this.page.getByRole('button', { name: 'Yes, cancel task' }).click();
  }
}
