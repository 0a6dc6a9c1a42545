import { and, asc, count, desc, eq, gt, inArray, like, lte, sql } from 'drizzle-orm';
import { getDb, preparedQuery } from '../client';
import { taskEvents, tasks, type TaskStatus } from '../schema';

export type TaskRow = typeof tasks.$inferSelect;
export type NewTaskRow = Omit<TaskRow, 'lastUpdatedAt' | 'progress' | 'progressTotal' | 'progressMessage' | 'result' | 'error' | 'attempt'>;
export type TaskEventRow = typeof taskEvents.$inferSelect;

/** Inserts a task and its first event in one transaction: once this returns, the task is durable. */
/** A task's events are written with every creation and transition: one prepared statement. */
const insertTaskEvent = preparedQuery((db) =>
  db
    .insert(taskEvents)
    .values({
      taskId: sql.placeholder('taskId'),
      at: sql.placeholder('at'),
      fromStatus: sql.placeholder('fromStatus'),
      toStatus: sql.placeholder('toStatus'),
      statusMessage: sql.placeholder('statusMessage'),
      actor: sql.placeholder('actor'),
    })
    .prepare(),
);
const selectStatusById = preparedQuery((db) => db.select({ status: tasks.status }).from(tasks).where(eq(tasks.id, sql.placeholder('id'))).prepare());

export function insertTask(row: NewTaskRow, actor: string): TaskRow {
  return getDb().transaction((tx) => {
    const task = tx
      .insert(tasks)
      .values({ ...row, lastUpdatedAt: row.createdAt })
      .returning()
      .all()[0];
    insertTaskEvent().run({ taskId: task.id, at: task.createdAt, fromStatus: null, toStatus: task.status, statusMessage: task.statusMessage, actor });
    return task;
  });
}

const selectTaskByIdForUser = preparedQuery((db) =>
  db
    .select()
    .from(tasks)
    .where(and(eq(tasks.id, sql.placeholder('id')), eq(tasks.userId, sql.placeholder('userId'))))
    .prepare(),
);
const selectTaskById = preparedQuery((db) => db.select().from(tasks).where(eq(tasks.id, sql.placeholder('id'))).prepare());

export function getTaskByIdForUser(id: string, userId: string): TaskRow | undefined {
  return selectTaskByIdForUser().get({ id, userId });
}

/** The task a plain tools/call of this session started, found by the call's JSON-RPC id. */
export function getCallTaskByRequestId(sessionId: string, requestId: string | number, userId: string): TaskRow | undefined {
  return getDb()
    .select()
    .from(tasks)
    .where(and(eq(tasks.sessionId, sessionId), eq(tasks.callRequestId, requestId), eq(tasks.userId, userId), eq(tasks.invocation, 'call')))
    .get();
}

export function getTaskById(id: string): TaskRow | undefined {
  return selectTaskById().get({ id });
}

export interface TaskFilter {
  status?: TaskStatus;
  toolName?: string;
  /** The start of a task id, as a person types it. */
  idPrefix?: string;
}

/** A user's tasks, newest first, strictly after the keyset position when one is given. */
export function listTasksByUserId(
  userId: string,
  options: { limit: number; notExpiredAt: number; before?: { createdAt: number; id: string }; filter?: TaskFilter },
): TaskRow[] {
  const { before, filter = {} } = options;
  // A row-value comparison lets SQLite seek straight to the cursor in the (user, created, id) index.
  const position = before ? sql`(${tasks.createdAt}, ${tasks.id}) < (${before.createdAt}, ${before.id})` : undefined;
  const idPrefix = filter.idPrefix?.toLowerCase().replace(/[^0-9a-f-]/g, '');
  return getDb()
    .select()
    .from(tasks)
    .where(
      and(
        eq(tasks.userId, userId),
        gt(tasks.expiresAt, options.notExpiredAt),
        position,
        filter.status ? eq(tasks.status, filter.status) : undefined,
        filter.toolName ? eq(tasks.toolName, filter.toolName) : undefined,
        idPrefix ? like(tasks.id, `${idPrefix}%`) : undefined,
      ),
    )
    .orderBy(desc(tasks.createdAt), desc(tasks.id))
    .limit(options.limit)
    .all();
}

/** lastUpdatedAt moves forward on every change, even two changes within one millisecond. */
const nextUpdatedAt = (now: number) => sql`max(${now}, ${tasks.lastUpdatedAt} + 1)`;

/**
 * Moves a task between states only when it is in one of `from`: the database decides every race.
 * Returns the updated row, or undefined when the task was not in `from` (or does not exist).
 */
export function transitionTask(
  id: string,
  change: {
    from: readonly TaskStatus[];
    to: TaskStatus;
    statusMessage: string | null;
    actor: string;
    result?: Record<string, unknown>;
    error?: { code: number; message: string; data?: unknown };
  },
): TaskRow | undefined {
  const now = Date.now();
  return getDb().transaction((tx) => {
    const before = selectStatusById().get({ id });
    const updated = tx
      .update(tasks)
      .set({
        status: change.to,
        statusMessage: change.statusMessage,
        lastUpdatedAt: nextUpdatedAt(now),
        ...(change.result !== undefined ? { result: change.result } : {}),
        ...(change.error !== undefined ? { error: change.error } : {}),
      })
      .where(and(eq(tasks.id, id), inArray(tasks.status, [...change.from])))
      .returning()
      .all()[0];
    if (!updated) return undefined;
    insertTaskEvent().run({ taskId: id, at: now, fromStatus: before?.status ?? null, toStatus: change.to, statusMessage: change.statusMessage, actor: change.actor });
    return updated;
  });
}

/** Records progress and/or a status message of a task that is still running. */
export function updateTaskProgress(
  id: string,
  update: { progress?: number; progressTotal?: number | null; progressMessage?: string | null; statusMessage?: string },
): TaskRow | undefined {
  return getDb()
    .update(tasks)
    .set({ ...update, lastUpdatedAt: nextUpdatedAt(Date.now()) })
    .where(and(eq(tasks.id, id), inArray(tasks.status, ['working', 'input_required'])))
    .returning()
    .all()[0];
}

const updateLiveFields = preparedQuery((db) =>
  db
    .update(tasks)
    .set({
      progress: sql`${sql.placeholder('progress')}`,
      progressTotal: sql`${sql.placeholder('progressTotal')}`,
      progressMessage: sql`${sql.placeholder('progressMessage')}`,
      statusMessage: sql`${sql.placeholder('statusMessage')}`,
      lastUpdatedAt: sql`max(${sql.placeholder('now')}, ${tasks.lastUpdatedAt} + 1)`,
    })
    .where(and(eq(tasks.id, sql.placeholder('id')), inArray(tasks.status, ['working', 'input_required'])))
    .prepare(),
);

/**
 * Stores a running task's progress and status message as they stand; false when the task is no
 * longer active. Written about once a second per task, so it runs prepared and returns no row.
 */
export function storeTaskProgress(
  row: Pick<TaskRow, 'id' | 'progress' | 'progressTotal' | 'progressMessage' | 'statusMessage'>,
  now: number,
): boolean {
  const { id, progress, progressTotal, progressMessage, statusMessage } = row;
  return updateLiveFields().run({ id, progress, progressTotal, progressMessage, statusMessage, now }).changes > 0;
}

/** Marks a task as started again after a restart. */
export function incrementTaskAttempt(id: string): void {
  getDb()
    .update(tasks)
    .set({ attempt: sql`${tasks.attempt} + 1` })
    .where(eq(tasks.id, id))
    .run();
}

export function listTasksByStatus(statuses: readonly TaskStatus[]): TaskRow[] {
  return getDb()
    .select()
    .from(tasks)
    .where(inArray(tasks.status, [...statuses]))
    .orderBy(asc(tasks.createdAt))
    .all();
}

/** Deletes every task whose ttl has run out (their events go with them). */
export function deleteExpiredTasks(now: number): Array<{ id: string; userId: string }> {
  return getDb()
    .delete(tasks)
    .where(lte(tasks.expiresAt, now))
    .returning({ id: tasks.id, userId: tasks.userId })
    .all();
}

export function listTaskEventsByTaskId(taskId: string): TaskEventRow[] {
  return getDb().select().from(taskEvents).where(eq(taskEvents.taskId, taskId)).orderBy(asc(taskEvents.id)).all();
}

/** How many live tasks a user has in each status, for the dashboard's filters and badges. */
export function countTasksByStatusForUser(userId: string, notExpiredAt: number): Partial<Record<TaskStatus, number>> {
  const rows = getDb()
    .select({ status: tasks.status, n: count() })
    .from(tasks)
    .where(and(eq(tasks.userId, userId), gt(tasks.expiresAt, notExpiredAt)))
    .groupBy(tasks.status)
    .all();
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

const storedByUserUpTo = preparedQuery((db) => {
  const stored = db.select({ one: sql`1` }).from(tasks).where(eq(tasks.userId, sql.placeholder('userId'))).limit(sql.placeholder('atMost')).as('stored');
  return db.select({ n: count() }).from(stored).prepare();
});

/**
 * The user's stored tasks, ended ones included, counted up to `atMost`: the count stops there, so a
 * user with a million tasks costs no more to check than one at the limit.
 */
export function countTasksByUserIdUpTo(userId: string, atMost: number): number {
  return storedByUserUpTo().get({ userId, atMost })?.n ?? 0;
}

const countActiveByUser = preparedQuery((db) =>
  db
    .select({ n: count() })
    .from(tasks)
    .where(and(eq(tasks.userId, sql.placeholder('userId')), inArray(tasks.status, ['working', 'input_required'])))
    .prepare(),
);

export function countActiveTasksByUserId(userId: string): number {
  return countActiveByUser().get({ userId })?.n ?? 0;
}
