import { afterAll, beforeAll, describe, it } from 'vitest';
import type { Step } from '@/db/run';
import { checkEventCommittedMidRead } from '../helpers/pending-events';
import { queryRows, useFreshPostgres, type TestDatabase } from '../helpers/postgres';

/**
 * The notifier's read of a target's events on PostgreSQL, where each statement outside a transaction
 * sees what committed before it: an event committed between two statements of the read must not be
 * passed over. (The same on SQLite is in pending-events-sqlite.test.ts: the environment is read once
 * per process.)
 */
let database: TestDatabase;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ database, close } = await useFreshPostgres());
});

afterAll(async () => {
  await close?.();
});

describe('pendingEventsOf on PostgreSQL', () => {
  it('never moves a cursor past an event committed while it reads', async () => {
    await checkEventCommittedMidRead({
      execute: (step: Step) => (step.query as { execute(params?: Record<string, unknown>): Promise<unknown> }).execute(step.params),
      insertEvent: async (userId, type) => {
        const [row] = await queryRows<{ id: number }>(
          database.url,
          "INSERT INTO notification_events (user_id, task_id, type, payload, created_at) VALUES ($1, 'task', $2, '{}', 0) RETURNING id::int AS id",
          [userId, type],
        );
        return row.id;
      },
    });
  });
});
