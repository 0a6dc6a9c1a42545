import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '@/db/sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { newTaskRow } from '../helpers/task-rows';

/**
 * tasks/get's reads on SQLite are kept while nothing at all has been written (db/queries/tasks.ts). A
 * client polling a task must still see every change at once: whichever query or connection made it, a
 * transaction's own uncommitted change included, and never one that was rolled back.
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-task-status-'));
process.env.DATABASE_PATH = path.join(dataDir, 'app.db');
delete process.env.DATABASE_URL;
const { getStore, closeStore } = await import('@/db/client');
const { inTransaction } = await import('@/db/run');
const { createUser } = await import('@/db/queries/users');
const { getTaskStatusByIdForUser, insertTaskWithinLimits, storeTasksProgress, transitionTask, updateTaskProgress } = await import('@/db/queries/tasks');
const store = getStore();
if (store.dialect !== 'sqlite') throw new Error('expected SQLite');
/** Another connection to the same file, as the token CLI or a second process would have. */
const other = new Database(process.env.DATABASE_PATH);

afterAll(async () => {
  other.close();
  await closeStore();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const limits = { maxActive: 100, maxStored: 1000 };

async function workingTask(email: string) {
  const user = await createUser({ email });
  const created = await insertTaskWithinLimits(newTaskRow(user.id), 'test', limits);
  if (!('task' in created)) throw new Error('not created');
  return { userId: user.id, taskId: created.task.id };
}

describe('task status reads on SQLite', () => {
  it('sees each change as soon as it is made, by the queries, by a statement of its own, and by another connection', async () => {
    const { userId, taskId } = await workingTask('polled@example.com');
    const read = () => getTaskStatusByIdForUser(taskId, userId);
    expect((await read())?.statusMessage).toBe('The task is working.');
    expect((await read())?.statusMessage).toBe('The task is working.');

    await updateTaskProgress(taskId, { statusMessage: 'step 1' });
    expect((await read())?.statusMessage).toBe('step 1');

    await storeTasksProgress([{ id: taskId, progress: 1, progressTotal: 2, progressMessage: 'half', statusMessage: 'step 2', partialOutput: null }], Date.now());
    expect((await read())?.statusMessage).toBe('step 2');

    store.sqlite.prepare('UPDATE tasks SET status_message = ? WHERE id = ?').run('step 3', taskId);
    expect((await read())?.statusMessage).toBe('step 3');

    other.prepare('UPDATE tasks SET status_message = ? WHERE id = ?').run('step 4', taskId);
    // Other connections' writes are looked for at most once a clock millisecond (db/cache.ts).
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await read())?.statusMessage).toBe('step 4');

    await transitionTask(taskId, { from: ['working'], to: 'completed', statusMessage: 'done', actor: 'test', result: { content: [] } });
    expect(await read()).toMatchObject({ status: 'completed', statusMessage: 'done' });

    other.prepare('DELETE FROM tasks WHERE id = ?').run(taskId);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await read()).toBeUndefined();
  });

  it("answers only the task's owner, even once the owner's read is kept", async () => {
    const { userId, taskId } = await workingTask('owner@example.com');
    const stranger = await createUser({ email: 'stranger@example.com' });
    expect((await getTaskStatusByIdForUser(taskId, userId))?.id).toBe(taskId);
    expect(await getTaskStatusByIdForUser(taskId, stranger.id)).toBeUndefined();
  });

  it('shows a transaction its own change, and keeps nothing of it once it is rolled back', async () => {
    const { userId, taskId } = await workingTask('rolled-back@example.com');
    expect((await getTaskStatusByIdForUser(taskId, userId))?.status).toBe('working');
    await expect(
      inTransaction(function* (q) {
        yield* transitionTask.program(q, taskId, { from: ['working'], to: 'failed', statusMessage: 'about to be undone', actor: 'test' });
        expect((yield* getTaskStatusByIdForUser.program(q, taskId, userId))?.status).toBe('failed');
        throw new Error('changed its mind');
      }),
    ).rejects.toThrow('changed its mind');
    expect(await getTaskStatusByIdForUser(taskId, userId)).toMatchObject({ status: 'working', statusMessage: 'The task is working.' });
  });

  it('hands out a row no caller can change for the next one', async () => {
    const { userId, taskId } = await workingTask('frozen@example.com');
    await getTaskStatusByIdForUser(taskId, userId);
    const kept = (await getTaskStatusByIdForUser(taskId, userId))!;
    expect(() => Object.assign(kept, { status: 'cancelled' })).toThrow(TypeError);
    expect((await getTaskStatusByIdForUser(taskId, userId))?.status).toBe('working');
  });
});
