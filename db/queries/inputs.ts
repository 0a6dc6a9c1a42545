import { and, asc, count, desc, eq, isNotNull, isNull } from 'drizzle-orm';
import { getDb } from '../client';
import { taskInputs, tasks, type TaskStatus } from '../schema';

export type TaskInputRow = typeof taskInputs.$inferSelect;
export type InputKind = TaskInputRow['kind'];

/** Finds the task's input with this key, or creates it pending. `created` tells which happened. */
export function findOrCreateTaskInput(input: {
  taskId: string;
  userId: string;
  key: string;
  kind: InputKind;
  request: Record<string, unknown>;
}): { input: TaskInputRow; created: boolean } {
  return getDb().transaction((tx) => {
    const existing = tx
      .select()
      .from(taskInputs)
      .where(and(eq(taskInputs.taskId, input.taskId), eq(taskInputs.key, input.key)))
      .get();
    if (existing) return { input: existing, created: false };
    const now = Date.now();
    const created = tx
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
      .returning()
      .all()[0];
    return { input: created, created: true };
  });
}

export function getTaskInputById(id: string): TaskInputRow | undefined {
  return getDb().select().from(taskInputs).where(eq(taskInputs.id, id)).get();
}

/** Records the first answer only: false when the input was already answered or withdrawn. */
export function answerTaskInput(
  id: string,
  answer: { response: Record<string, unknown>; answeredBy: string; answeredByLabel: string | null; answeredVia: string | null },
): TaskInputRow | undefined {
  return getDb()
    .update(taskInputs)
    .set({ ...answer, status: 'answered', answeredAt: Date.now() })
    .where(and(eq(taskInputs.id, id), eq(taskInputs.status, 'pending')))
    .returning()
    .all()[0];
}

/** Withdraws every pending input of a task that has ended. */
export function withdrawPendingTaskInputs(taskId: string): TaskInputRow[] {
  return getDb()
    .update(taskInputs)
    .set({ status: 'withdrawn' })
    .where(and(eq(taskInputs.taskId, taskId), eq(taskInputs.status, 'pending')))
    .returning()
    .all();
}

/** Records the client's own task for an open question of this user's, once: false otherwise. */
export function claimTaskInputForClientTask(id: string, userId: string, clientTaskId: string): boolean {
  return (
    getDb()
      .update(taskInputs)
      .set({ clientTaskId })
      .where(and(eq(taskInputs.id, id), eq(taskInputs.userId, userId), eq(taskInputs.status, 'pending'), isNull(taskInputs.clientTaskId)))
      .run().changes > 0
  );
}

export function clearTaskInputClientTaskId(id: string): void {
  getDb().update(taskInputs).set({ clientTaskId: null }).where(eq(taskInputs.id, id)).run();
}

/**
 * Open questions of the tasks a session started as tasks: what a fresh GET stream of that session is
 * sent (a plain call's questions go on that call's own stream).
 */
export function listPendingTaskInputsBySessionId(sessionId: string): TaskInputRow[] {
  return getDb()
    .select({ input: taskInputs })
    .from(taskInputs)
    .innerJoin(tasks, eq(tasks.id, taskInputs.taskId))
    .where(and(eq(tasks.sessionId, sessionId), eq(tasks.invocation, 'task'), eq(taskInputs.status, 'pending')))
    .orderBy(asc(taskInputs.createdAt))
    .all()
    .map((row) => row.input);
}

/** Open questions a client is answering through a task of its own: followed again after a restart. */
export function listPendingTaskInputsWithClientTask() {
  return getDb()
    .select({ input: taskInputs, sessionId: tasks.sessionId })
    .from(taskInputs)
    .innerJoin(tasks, eq(tasks.id, taskInputs.taskId))
    .where(and(eq(taskInputs.status, 'pending'), isNotNull(taskInputs.clientTaskId)))
    .all();
}

export function listTaskInputsByTaskId(taskId: string): TaskInputRow[] {
  return getDb().select().from(taskInputs).where(eq(taskInputs.taskId, taskId)).orderBy(asc(taskInputs.createdAt)).all();
}

export function countPendingTaskInputsByTaskId(taskId: string): number {
  return (
    getDb()
      .select({ n: count() })
      .from(taskInputs)
      .where(and(eq(taskInputs.taskId, taskId), eq(taskInputs.status, 'pending')))
      .get()?.n ?? 0
  );
}

/** A user's open questions with their tasks, newest first: the dashboard inbox. */
export function listPendingTaskInputsByUserId(userId: string, kind?: InputKind) {
  return getDb()
    .select({ input: taskInputs, task: { id: tasks.id, toolName: tasks.toolName, status: tasks.status } })
    .from(taskInputs)
    .innerJoin(tasks, eq(tasks.id, taskInputs.taskId))
    .where(and(eq(taskInputs.userId, userId), eq(taskInputs.status, 'pending'), kind ? eq(taskInputs.kind, kind) : undefined))
    .orderBy(desc(taskInputs.createdAt))
    .all() as Array<{ input: TaskInputRow; task: { id: string; toolName: string; status: TaskStatus } }>;
}

export function countPendingTaskInputsByUserId(userId: string, kind: InputKind): number {
  return (
    getDb()
      .select({ n: count() })
      .from(taskInputs)
      .where(and(eq(taskInputs.userId, userId), eq(taskInputs.status, 'pending'), eq(taskInputs.kind, kind)))
      .get()?.n ?? 0
  );
}
