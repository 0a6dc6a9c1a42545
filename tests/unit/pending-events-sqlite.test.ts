import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '@/db/sqlite';
import { afterAll, describe, it } from 'vitest';
import type { Step } from '@/db/run';
import { checkEventCommittedMidRead } from '../helpers/pending-events';

/**
 * The notifier's read of a target's events on SQLite, with another connection (another process, such as
 * a command-line script) committing an event between two statements of the read. (PostgreSQL: see
 * pending-events-pg.test.ts.)
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-pending-events-'));
process.env.DATABASE_PATH = path.join(dataDir, 'app.db');
delete process.env.DATABASE_URL;
const { getStore, closeStore } = await import('@/db/client');
getStore();
const other = new Database(process.env.DATABASE_PATH);

afterAll(async () => {
  other.close();
  await closeStore();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('pendingEventsOf on SQLite', () => {
  it('never moves a cursor past an event committed while it reads', async () => {
    const insert = other.prepare("INSERT INTO notification_events (user_id, task_id, type, payload, created_at) VALUES (?, 'task', ?, '{}', 0)");
    await checkEventCommittedMidRead({
      execute: (step: Step) => (step.query as { all(params?: Record<string, unknown>): unknown }).all(step.params),
      insertEvent: async (userId, type) => Number(insert.run(userId, type).lastInsertRowid),
    });
  });
});
