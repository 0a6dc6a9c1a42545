import { and, asc, count, desc, eq, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import { changes, defineQuery, first, lock, preparedQuery, rows, type Program } from '../run';
import type { taskInputs, TaskStatus } from '../schema';
import { eventTask, notify, questionOf } from './notifications';

export type TaskInputRow = typeof taskInputs.$inferSelect;
export type InputKind = TaskInputRow['kind'];

/** Finds the task's input with this key, or creates it pending. `created` tells which happened. */
export const findOrCreateTaskInput = defineQuery(
  function* (
    q,
    input: {
      taskId: string;
      userId: string;
      key: string;
      kind: InputKind;
      request: Record<string, unknown>;
    },
  ): Program<{ input: TaskInputRow; created: boolean }> {
    const { taskInputs } = q.t;
    // Checked, then inserted: PostgreSQL serialises the two like SQLite's write lock does.
    yield* lock(q, 'task-input:' + input.taskId + ':' + input.key);
    const existing = yield* first(
      q.db
        .select()
        .from(taskInputs)
        .where(and(eq(taskInputs.taskId, input.taskId), eq(taskInputs.key, input.key))),
    );
    if (existing) return { input: existing, created: false };
    const now = Date.now();
    const created = (yield* first(
      q.db
        .insert(taskInputs)
        .values({
          id: crypto.randomUUID(),
          taskId: input.taskId,
          userId: input.userId,
          key: input.key,
          kind: input.kind,
          request: input.request,
          status: 'pending',
          createdAt: now,
        })
        .returning(),
    ))!;
    // A person is told of what waits for them; a model call waits for the client.
    if (created.kind !== 'sampling') {
      const task = yield* first(q.db.select().from(q.t.tasks).where(eq(q.t.tasks.id, input.taskId)));
      if (task) yield* notify(q, 'task.input_required', task.userId, { task: eventTask(task, 'input_required'), question: questionOf(created) }, now);
    }
    return { input: created, created: true };
  },
  { transaction: 'immediate' },
);

export const getTaskInputById = defineQuery(function* (q, id: string): Program<TaskInputRow | undefined> {
  const { taskInputs } = q.t;
  return yield* first(q.db.select().from(taskInputs).where(eq(taskInputs.id, id)));
});

/** Records the first answer only: false when the input was already answered or withdrawn. */
export const answerTaskInput = defineQuery(function* (
  q,
  id: string,
  answer: { response: Record<string, unknown>; answeredBy: string; answeredByLabel: string | null; answeredVia: string | null },
): Program<TaskInputRow | undefined> {
  const { taskInputs } = q.t;
  return yield* first(
    q.db
      .update(taskInputs)
      .set({ ...answer, status: 'answered', answeredAt: Date.now() })
      .where(and(eq(taskInputs.id, id), eq(taskInputs.status, 'pending')))
      .returning(),
  );
});

/** Withdraws every pending input of a task that has ended. */
/** Runs as every task ends, most often with no question to withdraw: prepared once. */
const withdrawPending = preparedQuery((q) =>
  q.db
    .update(q.t.taskInputs)
    .set({ status: 'withdrawn' })
    .where(and(eq(q.t.taskInputs.taskId, sql.placeholder('taskId')), eq(q.t.taskInputs.status, 'pending')))
    .returning(),
);

export const withdrawPendingTaskInputs = defineQuery(function* (q, taskId: string): Program<TaskInputRow[]> {
  return yield* rows(withdrawPending(q), { taskId });
});

/** Records the client's own task for an open question of this user's, once: false otherwise. */
export const claimTaskInputForClientTask = defineQuery(function* (q, id: string, userId: string, clientTaskId: string): Program<boolean> {
  const { taskInputs } = q.t;
  return (
    (yield* changes(
      q.db
        .update(taskInputs)
        .set({ clientTaskId })
        .where(and(eq(taskInputs.id, id), eq(taskInputs.userId, userId), eq(taskInputs.status, 'pending'), isNull(taskInputs.clientTaskId))),
    )) > 0
  );
});

export const clearTaskInputClientTaskId = defineQuery(function* (q, id: string): Program<void> {
  const { taskInputs } = q.t;
  yield* changes(q.db.update(taskInputs).set({ clientTaskId: null }).where(eq(taskInputs.id, id)));
});

/**
 * Open questions of the tasks a session started as tasks: what a fresh GET stream of that session is
 * sent (a plain call's questions go on that call's own stream).
 */
export const listPendingTaskInputsBySessionId = defineQuery(function* (q, sessionId: string): Program<TaskInputRow[]> {
  const { taskInputs, tasks } = q.t;
  const found = yield* rows(
    q.db
      .select({ input: taskInputs })
      .from(taskInputs)
      .innerJoin(tasks, eq(tasks.id, taskInputs.taskId))
      .where(and(eq(tasks.sessionId, sessionId), eq(tasks.invocation, 'task'), eq(taskInputs.status, 'pending')))
      .orderBy(asc(taskInputs.createdAt)),
  );
  return found.map((row) => row.input);
});

/** Open questions a client is answering through a task of its own: followed again after a restart. */
export const listPendingTaskInputsWithClientTask = defineQuery(function* (q): Program<Array<{ input: TaskInputRow; sessionId: string | null }>> {
  const { taskInputs, tasks } = q.t;
  return yield* rows(
    q.db
      .select({ input: taskInputs, sessionId: tasks.sessionId })
      .from(taskInputs)
      .innerJoin(tasks, eq(tasks.id, taskInputs.taskId))
      .where(and(eq(taskInputs.status, 'pending'), isNotNull(taskInputs.clientTaskId))),
  );
});

export const listTaskInputsByTaskId = defineQuery(function* (q, taskId: string): Program<TaskInputRow[]> {
  const { taskInputs } = q.t;
  return yield* rows(q.db.select().from(taskInputs).where(eq(taskInputs.taskId, taskId)).orderBy(asc(taskInputs.createdAt)));
});

export const countPendingTaskInputsByTaskId = defineQuery(function* (q, taskId: string): Program<number> {
  const { taskInputs } = q.t;
  return (
    (yield* first(
      q.db
        .select({ n: count() })
        .from(taskInputs)
        .where(and(eq(taskInputs.taskId, taskId), eq(taskInputs.status, 'pending'))),
    ))?.n ?? 0
  );
});

/** A user's open questions with their tasks, newest first: the dashboard inbox. */
export const listPendingTaskInputsByUserId = defineQuery(function* (
  q,
  userId: string,
  kind?: InputKind,
): Program<Array<{ input: TaskInputRow; task: { id: string; toolName: string; status: TaskStatus } }>> {
  const { taskInputs, tasks } = q.t;
  return (yield* rows(
    q.db
      .select({ input: taskInputs, task: { id: tasks.id, toolName: tasks.toolName, status: tasks.status } })
      .from(taskInputs)
      .innerJoin(tasks, eq(tasks.id, taskInputs.taskId))
      .where(and(eq(taskInputs.userId, userId), eq(taskInputs.status, 'pending'), kind ? eq(taskInputs.kind, kind) : undefined))
      .orderBy(desc(taskInputs.createdAt)),
  )) as Array<{ input: TaskInputRow; task: { id: string; toolName: string; status: TaskStatus } }>;
});

export const countPendingTaskInputsByUserId = defineQuery(function* (q, userId: string, kinds: InputKind[]): Program<number> {
  const { taskInputs } = q.t;
  return (
    (yield* first(
      q.db
        .select({ n: count() })
        .from(taskInputs)
        .where(and(eq(taskInputs.userId, userId), eq(taskInputs.status, 'pending'), inArray(taskInputs.kind, kinds))),
    ))?.n ?? 0
  );
});
