import { and, asc, count, desc, eq, getTableColumns, gt, inArray, like, lte, sql } from 'drizzle-orm';
import { rowCache } from '../cache';
import { getDb, preparedQuery } from '../client';
import { taskEvents, tasks, type TaskStatus } from '../schema';

export type TaskRow = typeof tasks.$inferSelect;
export type NewTaskRow = Omit<TaskRow, 'lastUpdatedAt' | 'progress' | 'progressTotal' | 'progressMessage' | 'result' | 'error' | 'attempt'>;
export type TaskEventRow = typeof taskEvents.$inferSelect;

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

/** A nullable JSON column's value as stored: SQL NULL for null, JSON text otherwise. */
const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

const insertTaskRow = preparedQuery((db) =>
  db
    .insert(tasks)
    .values({
      id: sql.placeholder('id'),
      userId: sql.placeholder('userId'),
      sessionId: sql.placeholder('sessionId'),
      clientName: sql.placeholder('clientName'),
      clientVersion: sql.placeholder('clientVersion'),
      toolName: sql.placeholder('toolName'),
      arguments: sql.placeholder('arguments'),
      status: sql.placeholder('status'),
      statusMessage: sql.placeholder('statusMessage'),
      createdAt: sql.placeholder('createdAt'),
      lastUpdatedAt: sql.placeholder('createdAt'),
      ttlMs: sql.placeholder('ttlMs'),
      expiresAt: sql.placeholder('expiresAt'),
      pollIntervalMs: sql.placeholder('pollIntervalMs'),
      progressToken: sql`${sql.placeholder('progressToken')}`,
      invocation: sql.placeholder('invocation'),
      callRequestId: sql`${sql.placeholder('callRequestId')}`,
    })
    .returning()
    .prepare(),
);

/**
 * Stored tasks per user, counted once and then kept in step by this process's own inserts and
 * deletions (counting them on every creation would read up to the whole limit's worth of rows).
 */
const storedCounts = rowCache<string, number>('stored-tasks-by-user', 10_000, 5_000);

/** Why a task was not inserted: the user is at one of the limits, with this many tasks. */
export type TaskLimitRefusal = { refused: 'active' | 'stored'; count: number };

/**
 * Inserts a task and its first event in one transaction, unless the user is at a limit (checked in
 * the same transaction, so that two creations cannot both take the last place): once this returns a
 * task, it is durable.
 */
export function insertTaskWithinLimits(
  row: NewTaskRow,
  actor: string,
  limits: { maxActive: number; maxStored: number },
): { task: TaskRow } | TaskLimitRefusal {
  return getDb().transaction(
    () => {
      const active = countActiveByUser().get({ userId: row.userId })?.n ?? 0;
      if (active >= limits.maxActive) return { refused: 'active', count: active } as const;
      const stored = storedCounts.get(row.userId, () => storedByUserUpTo().get({ userId: row.userId, atMost: limits.maxStored })?.n ?? 0) ?? 0;
      if (stored >= limits.maxStored) return { refused: 'stored', count: stored } as const;
      const task = insertTaskRow().all({ ...row, progressToken: jsonOrNull(row.progressToken), callRequestId: jsonOrNull(row.callRequestId) })[0];
      insertTaskEvent().run({ taskId: task.id, at: task.createdAt, fromStatus: null, toStatus: task.status, statusMessage: task.statusMessage, actor });
      storedCounts.update(row.userId, (n) => n + 1);
      return { task };
    },
    { behavior: 'immediate' },
  );
}

const selectTaskByIdForUser = preparedQuery((db) =>
  db
    .select()
    .from(tasks)
    .where(and(eq(tasks.id, sql.placeholder('id')), eq(tasks.userId, sql.placeholder('userId'))))
    .prepare(),
);
/** What tasks/get returns of a task, and its expiry: no arguments or result to read and decode. */
const taskStatusColumns = {
  id: tasks.id,
  status: tasks.status,
  statusMessage: tasks.statusMessage,
  createdAt: tasks.createdAt,
  lastUpdatedAt: tasks.lastUpdatedAt,
  ttlMs: tasks.ttlMs,
  pollIntervalMs: tasks.pollIntervalMs,
  expiresAt: tasks.expiresAt,
};
export type TaskStatusRow = Pick<TaskRow, keyof typeof taskStatusColumns>;
const selectTaskStatusByIdForUser = preparedQuery((db) =>
  db
    .select(taskStatusColumns)
    .from(tasks)
    .where(and(eq(tasks.id, sql.placeholder('id')), eq(tasks.userId, sql.placeholder('userId'))))
    .prepare(),
);
const selectTaskById = preparedQuery((db) => db.select().from(tasks).where(eq(tasks.id, sql.placeholder('id'))).prepare());

export function getTaskByIdForUser(id: string, userId: string): TaskRow | undefined {
  return selectTaskByIdForUser().get({ id, userId });
}

export function getTaskStatusByIdForUser(id: string, userId: string): TaskStatusRow | undefined {
  return selectTaskStatusByIdForUser().get({ id, userId });
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
/** A task as lists show it: everything but its arguments, result and error, which a page does not decode. */
const { arguments: _arguments, result: _result, error: _error, ...taskListColumns } = getTableColumns(tasks);
export type TaskListRow = Omit<TaskRow, 'arguments' | 'result' | 'error'>;

export function listTasksByUserId(
  userId: string,
  options: { limit: number; notExpiredAt: number; before?: { createdAt: number; id: string }; filter?: TaskFilter },
): TaskListRow[] {
  const { before, filter = {} } = options;
  // A row-value comparison lets SQLite seek straight to the cursor in the (user, created, id) index.
  const position = before ? sql`(${tasks.createdAt}, ${tasks.id}) < (${before.createdAt}, ${before.id})` : undefined;
  const idPrefix = filter.idPrefix?.toLowerCase().replace(/[^0-9a-f-]/g, '');
  return getDb()
    .select(taskListColumns)
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
const nextUpdatedAt = (now: number | ReturnType<typeof sql.placeholder>) => sql`max(${now}, ${tasks.lastUpdatedAt} + 1)`;

/** A transition's update; `from` is a JSON array of statuses, and a null result or error keeps the stored one. */
const updateTaskStatus = preparedQuery((db) =>
  db
    .update(tasks)
    .set({
      status: sql`${sql.placeholder('to')}`,
      statusMessage: sql`${sql.placeholder('statusMessage')}`,
      lastUpdatedAt: nextUpdatedAt(sql.placeholder('now')),
      result: sql`coalesce(${sql.placeholder('result')}, ${tasks.result})`,
      error: sql`coalesce(${sql.placeholder('error')}, ${tasks.error})`,
    })
    .where(and(eq(tasks.id, sql.placeholder('id')), sql`${tasks.status} in (select value from json_each(${sql.placeholder('from')}))`))
    .returning()
    .prepare(),
);

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
  return getDb().transaction(() => {
    const before = selectStatusById().get({ id });
    const updated = updateTaskStatus().all({
      id,
      from: JSON.stringify(change.from),
      to: change.to,
      statusMessage: change.statusMessage,
      now,
      result: jsonOrNull(change.result),
      error: jsonOrNull(change.error),
    })[0];
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
      lastUpdatedAt: nextUpdatedAt(sql.placeholder('now')),
    })
    .where(and(eq(tasks.id, sql.placeholder('id')), inArray(tasks.status, ['working', 'input_required'])))
    .prepare(),
);

/**
 * Stores running tasks' progress and status messages as they stand, in one transaction; for each row,
 * false when its task is no longer active. Written about once a second per task, so it runs prepared
 * and returns no rows.
 */
export function storeTasksProgress(rows: Array<Pick<TaskRow, 'id' | 'progress' | 'progressTotal' | 'progressMessage' | 'statusMessage'>>, now: number): boolean[] {
  return getDb().transaction(() =>
    rows.map(({ id, progress, progressTotal, progressMessage, statusMessage }) => updateLiveFields().run({ id, progress, progressTotal, progressMessage, statusMessage, now }).changes > 0),
  );
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
  const deleted = getDb().delete(tasks).where(lte(tasks.expiresAt, now)).returning({ id: tasks.id, userId: tasks.userId }).all();
  for (const { userId } of deleted) storedCounts.update(userId, (n) => n - 1);
  return deleted;
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

/**
 * The user's stored tasks, ended ones included, counted up to `atMost`: the count stops there, so a
 * user with a million tasks costs no more to check than one at the limit.
 */
const storedByUserUpTo = preparedQuery((db) => {
  const stored = db.select({ one: sql`1` }).from(tasks).where(eq(tasks.userId, sql.placeholder('userId'))).limit(sql.placeholder('atMost')).as('stored');
  return db.select({ n: count() }).from(stored).prepare();
});

/** The user's working or waiting tasks: at most the active limit of them, through the (user, status) index. */
const countActiveByUser = preparedQuery((db) =>
  db
    .select({ n: count() })
    .from(tasks)
    .where(and(eq(tasks.userId, sql.placeholder('userId')), inArray(tasks.status, ['working', 'input_required'])))
    .prepare(),
);

