import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '@/db/queries/users';
import { deleteExpiredTasks, insertTaskWithinLimits } from '@/db/queries/tasks';
import { queryRows, useFreshPostgres, type TestDatabase } from '../helpers/postgres';
import { newTaskRow } from '../helpers/task-rows';

/**
 * A creation on PostgreSQL is one statement (mcp_create_tasks) that takes the person's lock, reads their
 * active tasks and their stored count from task_counts, which triggers keep as tasks are inserted and
 * deleted by anyone, and inserts the task with its first event. A person's creations asked for while one
 * of theirs is being committed go together in the next such statement.
 */
let database: TestDatabase;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ database, close } = await useFreshPostgres());
});

afterAll(async () => {
  await close?.();
});

const storedCount = async (userId: string) => (await queryRows<{ stored: number }>(database.url, 'SELECT stored FROM task_counts WHERE user_id = $1', [userId]))[0]?.stored;
const tasksOf = async (userId: string) => Number((await queryRows<{ n: string }>(database.url, 'SELECT count(*) AS n FROM tasks WHERE user_id = $1', [userId]))[0].n);

describe('creating tasks on PostgreSQL', () => {
  it('returns the task exactly as stored, with its first event', async () => {
    const user = await createUser({ email: 'exact@example.com' });
    const row = newTaskRow(user.id);
    const created = await insertTaskWithinLimits(row, 'client', { maxActive: 10, maxStored: 10 });
    expect('task' in created).toBe(true);
    if (!('task' in created)) return;
    expect(created.task).toEqual({ ...row, lastUpdatedAt: row.createdAt, progress: null, progressTotal: null, progressMessage: null, partialOutput: null, result: null, error: null, attempt: 1, upstreamTaskId: null, upstreamSessionId: null });
    const [stored] = await queryRows<{ arguments: string; progress_token: string }>(database.url, 'SELECT arguments, progress_token FROM tasks WHERE id = $1', [row.id]);
    expect(JSON.parse(stored.arguments)).toEqual(row.arguments);
    expect(stored.progress_token).toBe('"token-1"');
    const events = await queryRows(database.url, 'SELECT from_status, to_status, status_message, actor FROM task_events WHERE task_id = $1', [row.id]);
    expect(events).toEqual([{ from_status: null, to_status: 'working', status_message: 'The task is working.', actor: 'client' }]);
    expect(await storedCount(user.id)).toBe(1);
  });

  it('lets exactly as many concurrent creations through as there are places, for either limit', async () => {
    const stored = await createUser({ email: 'stored-race@example.com' });
    const storedAnswers = await Promise.all(Array.from({ length: 20 }, () => insertTaskWithinLimits(newTaskRow(stored.id, { status: 'completed' }), 'client', { maxActive: 100, maxStored: 5 })));
    expect(storedAnswers.filter((answer) => 'task' in answer)).toHaveLength(5);
    expect(storedAnswers.filter((answer) => 'refused' in answer)).toEqual(Array.from({ length: 15 }, () => ({ refused: 'stored', count: 5 })));
    expect(await tasksOf(stored.id)).toBe(5);
    expect(await storedCount(stored.id)).toBe(5);

    const active = await createUser({ email: 'active-race@example.com' });
    const activeAnswers = await Promise.all(Array.from({ length: 20 }, () => insertTaskWithinLimits(newTaskRow(active.id), 'client', { maxActive: 3, maxStored: 100 })));
    expect(activeAnswers.filter((answer) => 'task' in answer)).toHaveLength(3);
    expect(activeAnswers.filter((answer) => 'refused' in answer)).toEqual(Array.from({ length: 17 }, () => ({ refused: 'active', count: 3 })));
    expect(await storedCount(active.id)).toBe(3);
  });

  it('commits together the creations of one person that wait for one of theirs, each answered as if it had come alone', async () => {
    const user = await createUser({ email: 'grouped@example.com' });
    const other = await createUser({ email: 'grouped-other@example.com' });
    const rows = Array.from({ length: 20 }, (_, index) => newTaskRow(user.id, { createdAt: Date.now() + index }));
    const [answers, otherAnswer] = await Promise.all([
      Promise.all(rows.map((row) => insertTaskWithinLimits(row, 'client', { maxActive: 100, maxStored: 100 }))),
      insertTaskWithinLimits(newTaskRow(other.id), 'client', { maxActive: 100, maxStored: 100 }),
    ]);
    expect(answers.map((answer) => ('task' in answer ? answer.task.id : answer))).toEqual(rows.map((row) => row.id));
    expect('task' in otherAnswer).toBe(true);
    // The first went alone; the other 19 waited for it and were inserted in one transaction.
    const transactions = await queryRows<{ n: string }>(database.url, 'SELECT count(DISTINCT xmin::text) AS n FROM tasks WHERE user_id = $1', [user.id]);
    expect(Number(transactions[0].n)).toBe(2);
    const events = await queryRows<{ task_id: string; to_status: string; actor: string }>(
      database.url,
      'SELECT e.task_id, e.to_status, e.actor FROM task_events AS e JOIN tasks AS t ON t.id = e.task_id WHERE t.user_id = $1 ORDER BY e.id',
      [user.id],
    );
    expect(events).toEqual(rows.map((row) => ({ task_id: row.id, to_status: 'working', actor: 'client' })));
    expect(await storedCount(user.id)).toBe(20);
    expect(await storedCount(other.id)).toBe(1);
  });

  it('fails only the creation that cannot be made when it waited with others', async () => {
    const user = await createUser({ email: 'one-bad@example.com' });
    const existing = newTaskRow(user.id);
    await insertTaskWithinLimits(existing, 'client', { maxActive: 100, maxStored: 100 });
    const rows = [newTaskRow(user.id), newTaskRow(user.id), { ...newTaskRow(user.id), id: existing.id }, newTaskRow(user.id)];
    const outcomes = await Promise.allSettled(rows.map((row) => insertTaskWithinLimits(row, 'client', { maxActive: 100, maxStored: 100 })));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(String((outcomes[2] as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
    expect(await tasksOf(user.id)).toBe(4);
    expect(await storedCount(user.id)).toBe(4);
  });

  it('keeps the stored count through inserts and deletions made by anyone, the sweep, and the person leaving', async () => {
    const user = await createUser({ email: 'kept@example.com' });
    const other = await createUser({ email: 'other@example.com' });
    for (let index = 0; index < 4; index += 1) await insertTaskWithinLimits(newTaskRow(user.id, { expiresAt: index < 2 ? 1 : Date.now() + 60_000 }), 'client', { maxActive: 10, maxStored: 10 });
    await insertTaskWithinLimits(newTaskRow(other.id, { expiresAt: 1 }), 'client', { maxActive: 10, maxStored: 10 });
    // By hand, as an operator would: several rows in one statement, then one deleted.
    await queryRows(
      database.url,
      `INSERT INTO tasks (id, user_id, tool_name, arguments, status, created_at, last_updated_at, ttl_ms, expires_at, poll_interval_ms)
       SELECT 'hand-' || n, $1, 'delay', '{}', 'completed', 0, 0, 1000, $2, 1000 FROM generate_series(1, 3) AS n`,
      [user.id, Date.now() + 60_000],
    );
    expect(await storedCount(user.id)).toBe(7);
    await queryRows(database.url, "DELETE FROM tasks WHERE id = 'hand-1'");
    expect(await storedCount(user.id)).toBe(6);
    const swept = await deleteExpiredTasks(Date.now());
    expect(swept.map((task) => task.userId).sort()).toEqual([user.id, user.id, other.id].sort());
    expect(await storedCount(user.id)).toBe(4);
    expect(await storedCount(other.id)).toBe(0);
    expect(await storedCount(user.id)).toBe(await tasksOf(user.id));
    // A full person is refused from the count alone, and taking tasks away gives the places back.
    expect(await insertTaskWithinLimits(newTaskRow(user.id), 'client', { maxActive: 10, maxStored: 4 })).toEqual({ refused: 'stored', count: 4 });
    await queryRows(database.url, "DELETE FROM tasks WHERE id LIKE 'hand-%'");
    expect('task' in (await insertTaskWithinLimits(newTaskRow(user.id), 'client', { maxActive: 10, maxStored: 4 }))).toBe(true);
    await queryRows(database.url, 'DELETE FROM users WHERE id = $1', [user.id]);
    expect(await storedCount(user.id)).toBeUndefined();
  });

  it('counts the tasks a database already holds when it is migrated', async () => {
    const sibling = await database.createSibling();
    const before = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
    const pool = new pg.Pool({ connectionString: sibling.url });
    try {
      // The migrations before the counts, then tasks written as the earlier version wrote them.
      const folder = path.join(process.cwd(), 'drizzle-pg');
      const journal = JSON.parse(fs.readFileSync(path.join(folder, 'meta', '_journal.json'), 'utf8'));
      const upTo = journal.entries.findIndex((entry: { tag: string }) => entry.tag === '0013_task_counts');
      expect(upTo).toBeGreaterThan(0);
      fs.mkdirSync(path.join(before, 'meta'));
      fs.writeFileSync(path.join(before, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries: journal.entries.slice(0, upTo) }));
      for (const entry of journal.entries.slice(0, upTo)) fs.copyFileSync(path.join(folder, `${entry.tag}.sql`), path.join(before, `${entry.tag}.sql`));
      await migrate(drizzle(pool), { migrationsFolder: before });
      await pool.query("INSERT INTO users (id, email, created_at) VALUES ('u1', 'u1@example.com', 0), ('u2', 'u2@example.com', 0)");
      await pool.query(
        `INSERT INTO tasks (id, user_id, tool_name, arguments, status, created_at, last_updated_at, ttl_ms, expires_at, poll_interval_ms)
         SELECT 't' || n, CASE WHEN n <= 3 THEN 'u1' ELSE 'u2' END, 'delay', '{}', 'completed', 0, 0, 1000, 1, 1000 FROM generate_series(1, 5) AS n`,
      );
      await migrate(drizzle(pool), { migrationsFolder: folder });
      const counts = await pool.query('SELECT user_id, stored FROM task_counts ORDER BY user_id');
      expect(counts.rows).toEqual([
        { user_id: 'u1', stored: 3 },
        { user_id: 'u2', stored: 2 },
      ]);
    } finally {
      await pool.end();
      fs.rmSync(before, { recursive: true, force: true });
      await sibling.drop();
    }
  });
});
