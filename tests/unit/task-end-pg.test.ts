import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOrCreateTaskInput, getTaskInputById } from '@/db/queries/inputs';
import { createNotificationTarget } from '@/db/queries/notifications';
import { endTaskUnheard, getTaskById, insertTaskWithinLimits, listTaskEventsByTaskId, transitionTask, type TaskTransition } from '@/db/queries/tasks';
import { createUser } from '@/db/queries/users';
import { queryRows, useFreshPostgres } from '../helpers/postgres';
import { newTaskRow } from '../helpers/task-rows';

/**
 * A task's ending on PostgreSQL, when nobody listens for its owner's notifications, is one statement:
 * the outcome, its event and its open questions withdrawn, committed together. When someone listens it
 * changes nothing, and the ending goes through the transaction that also records the notification.
 * Tasks that end while such a statement runs go together in the next one.
 */
let url: string;
let close: () => Promise<void>;

beforeAll(async () => {
  const fresh = await useFreshPostgres();
  url = fresh.database.url;
  close = fresh.close;
});

afterAll(async () => {
  await close?.();
});

async function workingTask(email: string): Promise<{ userId: string; taskId: string; inputId: string }> {
  const user = await createUser({ email });
  const row = newTaskRow(user.id, { toolName: 'ask_human', arguments: { question: 'Still there?' }, progressToken: null });
  const created = await insertTaskWithinLimits(row, 'client', { maxActive: 10, maxStored: 10 });
  if (!('task' in created)) throw new Error('the task was refused');
  const { input } = await findOrCreateTaskInput({ taskId: row.id, userId: user.id, key: 'q1', kind: 'elicitation', request: { message: 'Still there?', requestedSchema: { type: 'object', properties: {} } } });
  return { userId: user.id, taskId: row.id, inputId: input.id };
}

const completion = (runner = 'instance-a'): TaskTransition => ({
  from: ['working', 'input_required'],
  to: 'completed',
  statusMessage: 'The task completed.',
  actor: 'system',
  runner,
  result: { content: [{ type: 'text', text: 'done, "quoted" and ünïcödé' }] },
});

const notificationEvents = async (taskId: string) => queryRows<{ type: string }>(url, 'SELECT type FROM notification_events WHERE task_id = $1', [taskId]);

describe('ending a task on PostgreSQL', () => {
  it('records the outcome, its event and the withdrawn question together, and returns them as stored', async () => {
    const { taskId, inputId } = await workingTask('unheard@example.com');
    const ended = await endTaskUnheard(taskId, completion());
    expect(ended).toBeDefined();
    const stored = await getTaskById(taskId);
    expect(stored).toMatchObject({ status: 'completed', statusMessage: 'The task completed.', result: completion().result });
    expect(ended!.ended).toEqual(stored);
    expect(ended!.withdrawn).toEqual([await getTaskInputById(inputId)]);
    expect(ended!.withdrawn[0]).toMatchObject({ id: inputId, status: 'withdrawn', request: { message: 'Still there?' } });
    expect((await listTaskEventsByTaskId(taskId)).map((event) => [event.fromStatus, event.toStatus, event.actor])).toEqual([
      [null, 'working', 'client'],
      ['working', 'completed', 'system'],
    ]);
    expect(await notificationEvents(taskId)).toEqual([]);
  });

  it('changes nothing for a task that has ended already, or that another instance holds', async () => {
    const { taskId, inputId } = await workingTask('held@example.com');
    expect(await endTaskUnheard(taskId, completion('instance-b'))).toEqual({ ended: undefined, withdrawn: [] });
    expect((await getTaskById(taskId))!.status).toBe('working');
    expect((await getTaskInputById(inputId))!.status).toBe('pending');

    await endTaskUnheard(taskId, completion());
    const afterFirst = await getTaskById(taskId);
    expect(await endTaskUnheard(taskId, { ...completion(), to: 'failed', statusMessage: 'Too late.' })).toEqual({ ended: undefined, withdrawn: [] });
    expect(await getTaskById(taskId)).toEqual(afterFirst);
    expect(await listTaskEventsByTaskId(taskId)).toHaveLength(2);
    expect(await endTaskUnheard('no-such-task', completion())).toEqual({ ended: undefined, withdrawn: [] });
  });

  it('leaves a task whose owner, or the operator, listens to the transaction that records the notification', async () => {
    for (const owner of ['own', 'operator'] as const) {
      const { userId, taskId, inputId } = await workingTask(`heard-${owner}@example.com`);
      const target = await createNotificationTarget({
        userId: owner === 'own' ? userId : null,
        channel: 'webhook',
        address: 'https://example.com/hook',
        secret: null,
        events: ['task.completed'],
        options: {},
      });
      expect(await endTaskUnheard(taskId, completion())).toBeUndefined();
      expect((await getTaskById(taskId))!.status).toBe('working');
      expect((await getTaskInputById(inputId))!.status).toBe('pending');
      expect(await listTaskEventsByTaskId(taskId)).toHaveLength(1);

      expect((await transitionTask(taskId, completion()))!.status).toBe('completed');
      expect(await notificationEvents(taskId)).toEqual([{ type: 'task.completed' }]);
      await queryRows(url, 'DELETE FROM notification_targets WHERE id = $1', [target.id]);
    }
  });

  it('ends together the tasks that end while another ending is committed, each answered as if it had ended alone', async () => {
    const tasks = await Promise.all(Array.from({ length: 12 }, (_, index) => workingTask(`grouped-end-${index}@example.com`)));
    const heard = tasks[5];
    await createNotificationTarget({ userId: heard.userId, channel: 'webhook', address: 'https://example.com/hook', secret: null, events: ['task.failed'], options: {} });
    const ending = (index: number): TaskTransition =>
      index === 7 ? completion('instance-b') : { ...completion(), result: { content: [{ type: 'text', text: `result ${index}` }] } };
    const answers = await Promise.all([
      ...tasks.map(({ taskId }, index) => endTaskUnheard(taskId, ending(index))),
      endTaskUnheard('no-such-task', completion()),
      // The same task twice at once: the second goes in a later statement, and finds it ended.
      endTaskUnheard(tasks[0].taskId, { ...completion(), to: 'failed', statusMessage: 'Too late.' }),
    ]);

    for (const [index, { taskId, inputId }] of tasks.entries()) {
      const stored = await getTaskById(taskId);
      const events = (await listTaskEventsByTaskId(taskId)).map((event) => [event.fromStatus, event.toStatus]);
      if (index === 5) {
        expect(answers[index]).toBeUndefined();
        expect(stored!.status).toBe('working');
        expect((await getTaskInputById(inputId))!.status).toBe('pending');
        expect(events).toEqual([[null, 'working']]);
      } else if (index === 7) {
        expect(answers[index]).toEqual({ ended: undefined, withdrawn: [] });
        expect(stored!.status).toBe('working');
        expect(events).toEqual([[null, 'working']]);
      } else {
        expect(stored).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: `result ${index}` }] } });
        expect(answers[index]!.ended).toEqual(stored);
        expect(answers[index]!.withdrawn).toEqual([await getTaskInputById(inputId)]);
        expect(answers[index]!.withdrawn[0]).toMatchObject({ id: inputId, status: 'withdrawn' });
        expect(events).toEqual([
          [null, 'working'],
          ['working', 'completed'],
        ]);
      }
    }
    expect(answers[tasks.length]).toEqual({ ended: undefined, withdrawn: [] });
    expect(answers[tasks.length + 1]).toEqual({ ended: undefined, withdrawn: [] });
    // The first ending went alone; the others that came while it was committed went in one statement.
    const ended = tasks.filter((_, index) => index !== 5 && index !== 7).map((task) => task.taskId);
    const commits = await queryRows<{ n: string }>(url, 'SELECT count(DISTINCT xmin::text) AS n FROM tasks WHERE id = any($1)', [ended]);
    expect(Number(commits[0].n)).toBe(2);
  });
});
