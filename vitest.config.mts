import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { alias: { '@': path.dirname(fileURLToPath(import.meta.url)) } },
  test: {
    include: ['tests/unit/**/*.test.ts', 'tests/integration/**/*.test.ts'],
    // Integration files each run a real server; one at a time keeps a 2-core machine responsive.
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // A forgotten .only must fail the run, not quietly skip every other test.
    allowOnly: false,
    // Stopping a hung test's server must not hang the run either.
    teardownTimeout: 30_000,
  },
});
