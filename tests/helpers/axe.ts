import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from '@playwright/test';
import type { AxeResults } from 'axe-core';

/** axe-core itself, run in the page (through the DevTools protocol, so the page's CSP does not apply). */
const axeSource = fs.readFileSync(createRequire(__filename).resolve('axe-core/axe.min.js'), 'utf8');

export const phone = { width: 390, height: 844 };
export const desktop = { width: 1280, height: 800 };

/** axe-core's findings on the page as it is, one line each, so that a failure says what and where. */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const results = await page.evaluate(() => (window as unknown as { axe: { run(): Promise<AxeResults> } }).axe.run());
  return results.violations.map((violation) => `${violation.id} (${violation.impact}): ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}

/** The page's findings in light and dark, at phone and desktop sizes, each line naming where. */
export async function axeViolationsEverywhere(page: Page, label: string, reload: () => Promise<unknown> = () => page.reload()): Promise<string[]> {
  const found: string[] = [];
  for (const colorScheme of ['light', 'dark'] as const) {
    for (const size of [phone, desktop]) {
      await page.emulateMedia({ colorScheme });
      await page.setViewportSize(size);
      await reload();
      for (const line of await axeViolations(page)) found.push(`${colorScheme} ${size.width}px ${label}: ${line}`);
    }
  }
  return found;
}
