import { and, asc, count, desc, eq, getTableColumns, type Column, type Table, gt, inArray, isNotNull, isNull, like, lte, or, sql } from 'drizzle-orm';
import { rowCache } from '../cache';
import { getStore } from '../client';
import { StatementGroups } from '../statement-groups';
import { changes, currentSqliteWriteCount, defineQuery, first, greatest, postgresStatement, preparedQuery, rows, sqliteWriteCount, type Program, type QueryContext } from '../run';
import type { taskEvents, tasks, TaskStatus } from '../schema';
import type { TaskInputRow } from './inputs';
import { endEventOf, eventTask, notify } from './notifications';

export type TaskRow = typeof tasks.$inferSelect;
export type NewTaskRow = Omit<TaskRow, 'lastUpdatedAt' | 'progress' | 'progressTotal' | 'progressMessage' | 'result' | 'error' | 'attempt' | 'partialOutput' | 'upstreamTaskId' | 'upstreamSessionId'>;
export type TaskEventRow = typeof taskEvents.$inferSelect;

/** A task's events are written with every creation and transition: one prepared statement. */
const insertTaskEvent = preparedQuery((q) =>
  q.db.insert(q.t.taskEvents).values({
    taskId: sql.placeholder('taskId'),
    at: sql.placeholder('at'),
    fromStatus: sql.placeholder('fromStatus'),
    toStatus: sql.placeholder('toStatus'),
    statusMessage: sql.placeholder('statusMessage'),
    actor: sql.placeholder('actor'),
  }),
);
const selectStatusById = preparedQuery((q) => q.db.select({ status: q.t.tasks.status }).from(q.t.tasks).where(eq(q.t.tasks.id, sql.placeholder('id'))));

/** A nullable JSON column's value as stored: SQL NULL for null, JSON text otherwise. */
const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

const insertTaskRow = preparedQuery((q) =>
  q.db
    .insert(q.t.tasks)
    .values({
      id: sql.placeholder('id'),
      userId: sql.placeholder('userId'),
      sessionId: sql.placeholder('sessionId'),
      clientName: sql.placeholder('clientName'),
      clientVersion: sql.placeholder('clientVersion'),
      protocolVersion: sql.placeholder('protocolVersion'),
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
      runner: sql.placeholder('runner'),
      leaseExpiresAt: sql.placeholder('leaseExpiresAt'),
    })
    .returning(),
);

/**
 * Stored tasks per user, counted once and then kept in step by this process's own inserts and
 * deletions (counting them on every creation would read up to the whole limit's worth of rows). On
 * SQLite only: one process makes every insert.
 */
const storedCounts = rowCache<string, number>('stored-tasks-by-user', 10_000, 5_000);

/** Why a task was not inserted: the user is at one of the limits, with this many tasks. */
export type TaskLimitRefusal = { refused: 'active' | 'stored'; count: number };

type TaskLimits = { maxActive: number; maxStored: number };

/**
 * Inserts a task and its first event in one transaction, unless the user is at a limit (checked in
 * the same transaction, under a lock per user, so that two creations cannot both take the last
 * place): once this resolves with a task, it is durable. On PostgreSQL all of it is one statement
 * (`mcp_create_tasks`, drizzle-pg/0014_grouped_creations.sql), shared by the person's creations that
 * wait while one of theirs is committed (see createInGroup), which reads the stored count from a row
 * its triggers keep.
 */
export function insertTaskWithinLimits(row: NewTaskRow, actor: string, limits: TaskLimits): Promise<{ task: TaskRow } | TaskLimitRefusal> {
  return getStore().dialect === 'pg' ? createInGroup(row, actor, limits) : insertOnSqlite(row, actor, limits);
}

const insertOnSqlite = defineQuery(
  function* (q, row: NewTaskRow, actor: string, limits: TaskLimits): Program<{ task: TaskRow } | TaskLimitRefusal> {
    const active = (yield* first(countActiveByUser(q), { userId: row.userId }))?.n ?? 0;
    if (active >= limits.maxActive) return { refused: 'active', count: active };
    let stored = storedCounts.peek(row.userId);
    if (stored === undefined) {
      const stamp = storedCounts.stamp();
      stored = (yield* first(storedByUserUpTo(q), { userId: row.userId, atMost: limits.maxStored }))?.n ?? 0;
      storedCounts.set(row.userId, stored, stamp);
    }
    if (stored >= limits.maxStored) return { refused: 'stored', count: stored };
    const [task] = yield* rows(insertTaskRow(q), { ...row, progressToken: jsonOrNull(row.progressToken), callRequestId: jsonOrNull(row.callRequestId) });
    yield* changes(insertTaskEvent(q), { taskId: task.id, at: task.createdAt, fromStatus: null, toStatus: task.status, statusMessage: task.statusMessage, actor });
    storedCounts.update(row.userId, (n) => n + 1);
    return { task };
  },
  { transaction: 'immediate' },
);

/** The columns a new task starts with besides those its creator gives. */
const newTaskDefaults = { progress: null, progressTotal: null, progressMessage: null, partialOutput: null, result: null, error: null, attempt: 1, upstreamTaskId: null, upstreamSessionId: null };

/** A table's columns as [property, column] pairs, listed once. */
const columnsOf = (() => {
  const listed = new WeakMap<Table, Array<[string, Column]>>();
  return (table: Table) => {
    let columns = listed.get(table);
    if (!columns) {
      columns = Object.entries(getTableColumns(table));
      listed.set(table, columns);
    }
    return columns;
  };
})();

/** A row as PostgreSQL gives it (its column names, bigint as text or a JSON number) as drizzle would map it. */
function rowFromPostgres<R>(table: Table, raw: Record<string, unknown>): R {
  const row: Record<string, unknown> = {};
  for (const [key, column] of columnsOf(table)) {
    const value = raw[column.name];
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as R;
}

const taskFromPostgres = (q: QueryContext, raw: Record<string, unknown>) => rowFromPostgres<TaskRow>(q.t.tasks, raw);

/** One creation as mcp_create_tasks takes it: the row under its column names, as drizzle would store it. */
function creationEntry(row: NewTaskRow, actor: string, limits: TaskLimits, tasks: Table) {
  const full: Record<string, unknown> = { ...newTaskDefaults, ...row, lastUpdatedAt: row.createdAt };
  const task: Record<string, unknown> = {};
  for (const [key, column] of columnsOf(tasks)) task[column.name] = full[key] === null || full[key] === undefined ? null : column.mapToDriverValue(full[key]);
  return { task, actor, max_active: limits.maxActive, max_stored: Math.min(limits.maxStored, 2 ** 31 - 1) };
}

const createManyStatement = postgresStatement<{ r: Array<{ task?: Record<string, unknown> } | TaskLimitRefusal> }>('SELECT mcp_create_tasks(cast($1 AS jsonb)) AS r');

const createMany = defineQuery(
  function* (q, entries: Array<ReturnType<typeof creationEntry>>): Program<Array<{ task: TaskRow } | TaskLimitRefusal>> {
    const [answer] = yield* createManyStatement(q, [JSON.stringify(entries)]);
    return answer.r.map((one) => ('refused' in one ? one : { task: taskFromPostgres(q, one.task!) }));
  },
  { oneStatementOnPostgres: true },
);

/**
 * Each person's creations asked for while a statement creating theirs runs go together in the next. A
 * person's creations take their lock in turn, and each holds it through its commit's flush to disk, so
 * one after another they would go no faster than one flush each; together they share one.
 */
const creationGroups = new StatementGroups(createMany, 100);

function createInGroup(row: NewTaskRow, actor: string, limits: TaskLimits): Promise<{ task: TaskRow } | TaskLimitRefusal> {
  return creationGroups.ask(row.userId, creationEntry(row, actor, limits, getStore().tables.tasks));
}

const selectTaskByIdForUser = preparedQuery((q) =>
  q.db
    .select()
    .from(q.t.tasks)
    .where(and(eq(q.t.tasks.id, sql.placeholder('id')), eq(q.t.tasks.userId, sql.placeholder('userId')))),
);
/** What tasks/get returns of a task, and its expiry: no arguments or result to read and decode. */
const taskStatusColumns = (t: QueryContext['t']) => ({
  id: t.tasks.id,
  status: t.tasks.status,
  statusMessage: t.tasks.statusMessage,
  createdAt: t.tasks.createdAt,
  lastUpdatedAt: t.tasks.lastUpdatedAt,
  ttlMs: t.tasks.ttlMs,
  pollIntervalMs: t.tasks.pollIntervalMs,
  expiresAt: t.tasks.expiresAt,
});
export type TaskStatusRow = Pick<TaskRow, keyof ReturnType<typeof taskStatusColumns>>;
const selectTaskStatusByIdForUser = preparedQuery((q) =>
  q.db
    .select(taskStatusColumns(q.t))
    .from(q.t.tasks)
    .where(and(eq(q.t.tasks.id, sql.placeholder('id')), eq(q.t.tasks.userId, sql.placeholder('userId')))),
);
const selectTaskById = preparedQuery((q) => q.db.select().from(q.t.tasks).where(eq(q.t.tasks.id, sql.placeholder('id'))));

export const getTaskByIdForUser = defineQuery(function* (q, id: string, userId: string): Program<TaskRow | undefined> {
  return yield* first(selectTaskByIdForUser(q), { id, userId });
});

/**
 * tasks/get's reads on SQLite, kept with the connection's write count when read: a client polling a task
 * reads it again and again, and a read is most of a tasks/get's work (SQLite's read lock is two system
 * calls). Any write at all, by this process or (through data_version) another, makes every entry stale.
 */
const taskStatuses = rowCache<string, { row: TaskStatusRow; writes: number }>('task-status-by-id-and-user', 10_000, 60_000);

const taskStatusKey = (id: string, userId: string) => `${id}\u0000${userId}`;

/** The kept status, if it was read at this write count. */
function keptTaskStatus(id: string, userId: string, writes: number | undefined): TaskStatusRow | undefined {
  if (writes === undefined) return undefined;
  const hit = taskStatuses.peek(taskStatusKey(id, userId));
  return hit?.writes === writes ? hit.row : undefined;
}

export const getTaskStatusByIdForUser = defineQuery(
  function* (q, id: string, userId: string): Program<TaskStatusRow | undefined> {
    const writes = sqliteWriteCount(q);
    const kept = keptTaskStatus(id, userId, writes);
    if (kept) return kept;
    const stamp = taskStatuses.stamp();
    const row: TaskStatusRow | undefined = yield* first(selectTaskStatusByIdForUser(q), { id, userId });
    // Frozen: every later read of the entry is handed the same object.
    if (writes !== undefined) taskStatuses.set(taskStatusKey(id, userId), row && { row: Object.freeze(row), writes }, stamp);
    return row;
  },
  { fromCache: (id, userId) => keptTaskStatus(id, userId, currentSqliteWriteCount()) },
);

/** The task a plain tools/call of this session started, found by the call's JSON-RPC id. */
export const getCallTaskByRequestId = defineQuery(function* (q, sessionId: string, requestId: string | number, userId: string): Program<TaskRow | undefined> {
  const { tasks } = q.t;
  return yield* first(
    q.db
      .select()
      .from(tasks)
      .where(and(eq(tasks.sessionId, sessionId), eq(tasks.callRequestId, requestId), eq(tasks.userId, userId), eq(tasks.invocation, 'call'))),
  );
});

export const getTaskById = defineQuery(function* (q, id: string): Program<TaskRow | undefined> {
  return yield* first(selectTaskById(q), { id });
});

export interface TaskFilter {
  status?: TaskStatus;
  toolName?: string;
  /** The start of a task id, as a person types it. */
  idPrefix?: string;
}

/** A task as lists show it: everything but its arguments, result and error, which a page does not decode. */
function taskListColumns(t: QueryContext['t']) {
  const { arguments: _arguments, result: _result, error: _error, partialOutput: _partialOutput, ...columns } = getTableColumns(t.tasks);
  return columns;
}
export type TaskListRow = Omit<TaskRow, 'arguments' | 'result' | 'error' | 'partialOutput'>;

/** A user's tasks, newest first, strictly after the keyset position when one is given. */
export const listTasksByUserId = defineQuery(function* (
  q,
  userId: string,
  options: { limit: number; notExpiredAt: number; before?: { createdAt: number; id: string }; filter?: TaskFilter },
): Program<TaskListRow[]> {
  const { tasks } = q.t;
  const { before, filter = {} } = options;
  // A row-value comparison lets the database seek straight to the cursor in the (user, created, id) index.
  const position = before ? sql`(${tasks.createdAt}, ${tasks.id}) < (${before.createdAt}, ${before.id})` : undefined;
  const idPrefix = filter.idPrefix?.toLowerCase().replace(/[^0-9a-f-]/g, '');
  return yield* rows(
    q.db
      .select(taskListColumns(q.t))
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
      .limit(options.limit),
  );
});

/** lastUpdatedAt moves forward on every change, even two changes within one millisecond. */
const nextUpdatedAt = (q: QueryContext, now: unknown) => greatest(q, now, sql`${q.t.tasks.lastUpdatedAt} + 1`);

/**
 * A transition's update on SQLite; `from` is a JSON array of statuses, a null result or error keeps the
 * stored one, and a null `runner` sets no condition (otherwise only while that instance holds the task).
 */
const updateTaskStatus = preparedQuery((q) =>
  q.db
    .update(q.t.tasks)
    .set({
      status: sql`${sql.placeholder('to')}`,
      statusMessage: sql`${sql.placeholder('statusMessage')}`,
      lastUpdatedAt: nextUpdatedAt(q, sql.placeholder('now')),
      result: sql`coalesce(${sql.placeholder('result')}, ${q.t.tasks.result})`,
      error: sql`coalesce(${sql.placeholder('error')}, ${q.t.tasks.error})`,
    })
    .where(
      and(
        eq(q.t.tasks.id, sql.placeholder('id')),
        sql`${q.t.tasks.status} in (select value from json_each(${sql.placeholder('from')}))`,
        sql`(${sql.placeholder('runner')} is null or ${q.t.tasks.runner} = ${sql.placeholder('runner')})`,
      ),
    )
    .returning(),
);

/**
 * A transition on PostgreSQL as common table expressions: the row locked as it is, updated when its
 * status is one of `from` (a JSON array) and, given a runner, while that instance holds it, and the
 * event with the status it had before. `from` is matched as an array, not an IN (subquery): when a
 * concurrent transaction changed the row first, PostgreSQL re-checks the condition on the new row, and a
 * semi-join re-checked that way matches nothing (a cancel racing a question failed). `unheard` also
 * leaves the row alone when anyone listens for its owner's notifications (`heard.listening`). Every
 * table is reached through a parameter or an index: a named statement's generic plan, made when the
 * tables were small, would otherwise scan the whole table for as long as the connection lives.
 */
const transitionExpressions = (unheard: boolean) => `
  WITH old AS (SELECT id, user_id, status FROM tasks WHERE id = $1 FOR UPDATE),${
    unheard
      ? `
  heard AS (
    SELECT EXISTS (SELECT 1 FROM notification_targets WHERE user_id = (SELECT user_id FROM old))
      OR EXISTS (SELECT 1 FROM notification_targets WHERE user_id IS NULL) AS listening
  ),`
      : ''
  }
  updated AS (
    UPDATE tasks AS t
    SET status = $2, status_message = $3, last_updated_at = greatest(cast($4 AS bigint), t.last_updated_at + 1),
        result = coalesce($5, t.result), error = coalesce($6, t.error)
    FROM old${unheard ? ', heard' : ''}
    WHERE t.id = $1 AND t.id = old.id${unheard ? ' AND NOT heard.listening' : ''}
      AND t.status = any(array(SELECT json_array_elements_text(cast($7 AS json))))
      AND (cast($8 AS text) IS NULL OR t.runner = cast($8 AS text))
    RETURNING t.*
  ),
  event AS (
    INSERT INTO task_events (task_id, at, from_status, to_status, status_message, actor)
    SELECT updated.id, cast($4 AS bigint), old.status, $2, $3, $9 FROM updated JOIN old ON old.id = updated.id
  )`;

/** A transition on PostgreSQL in one statement. */
const transitionOnPostgres = postgresStatement<Record<string, unknown>>(`${transitionExpressions(false)}
  SELECT * FROM updated`);

/**
 * A task's ending on PostgreSQL in one statement when nobody listens for its owner's notifications:
 * the transition, its event and the task's open questions withdrawn. When someone listens, nothing.
 */
const endUnheardOnPostgres = postgresStatement<{ listening: boolean; task: Record<string, unknown> | null; withdrawn: Array<Record<string, unknown>> }>(`${transitionExpressions(true)},
  withdrawn AS (
    UPDATE task_inputs AS i SET status = 'withdrawn' FROM updated
    WHERE i.task_id = updated.id AND i.status = 'pending'
    RETURNING i.*
  )
  SELECT heard.listening, (SELECT to_jsonb(updated) FROM updated) AS task,
    (SELECT coalesce(jsonb_agg(to_jsonb(withdrawn)), '[]'::jsonb) FROM withdrawn) AS withdrawn
  FROM heard`);

/**
 * Several tasks' endings on PostgreSQL in one statement, each as transitionTask and
 * withdrawPendingTaskInputs would make it in a transaction of its own: the transition as above, its
 * event and the task's open questions withdrawn; but only for a task whose owner nobody listens to for
 * notifications (`listening`), as then there is no event of theirs to record with it. `$1` is a JSON
 * array of {n, id, to, status_message, result, error, from, runner, actor}, one per task, `$2` the time,
 * `$3` the ids again, as an array: the rows are found through the primary key, never by a scan.
 * The rows are locked in the order of their ids, so that two such statements never wait for each other.
 * Planned for each call with the group it has (about 0.6 ms of PostgreSQL's time): a plan kept for a
 * group of one, or made while the tasks table was small, would not do for a group of a hundred on a
 * large one. A group of one takes endUnheardOnPostgres, whose plan is kept.
 */
const endGroupUnheardOnPostgres = postgresStatement<{ n: number; listening: boolean | null; task: Record<string, unknown> | null; withdrawn: Array<Record<string, unknown>> }>(
  `
  WITH ending AS (
    SELECT * FROM jsonb_to_recordset(cast($1 AS jsonb))
      AS x (n integer, id text, "to" text, status_message text, result text, error text, "from" jsonb, runner text, actor text)
  ),
  old AS (SELECT id, user_id, status FROM tasks WHERE id = any(cast($3 AS text[])) ORDER BY id FOR UPDATE),
  heard AS (
    SELECT old.id, EXISTS (SELECT 1 FROM notification_targets WHERE user_id = old.user_id)
      OR EXISTS (SELECT 1 FROM notification_targets WHERE user_id IS NULL) AS listening
    FROM old
  ),
  updated AS (
    UPDATE tasks AS t
    SET status = e."to", status_message = e.status_message, last_updated_at = greatest(cast($2 AS bigint), t.last_updated_at + 1),
        result = coalesce(e.result, t.result), error = coalesce(e.error, t.error)
    FROM ending AS e, heard AS h
    WHERE t.id = e.id AND h.id = e.id AND NOT h.listening
      AND t.status = any(array(SELECT jsonb_array_elements_text(e."from")))
      AND (e.runner IS NULL OR t.runner = e.runner)
    RETURNING t.*
  ),
  event AS (
    INSERT INTO task_events (task_id, at, from_status, to_status, status_message, actor)
    SELECT updated.id, cast($2 AS bigint), old.status, e."to", e.status_message, e.actor
    FROM updated JOIN old ON old.id = updated.id JOIN ending AS e ON e.id = updated.id
  ),
  withdrawn AS (
    UPDATE task_inputs AS i SET status = 'withdrawn' FROM updated
    WHERE i.task_id = updated.id AND i.status = 'pending'
    RETURNING i.*
  )
  SELECT e.n, h.listening, (SELECT to_jsonb(u) FROM updated AS u WHERE u.id = e.id) AS task,
    (SELECT coalesce(jsonb_agg(to_jsonb(w)), '[]'::jsonb) FROM withdrawn AS w WHERE w.task_id = e.id) AS withdrawn
  FROM ending AS e LEFT JOIN heard AS h ON h.id = e.id
  ORDER BY e.n`,
  { plannedEachCall: true },
);

type Ending = { id: string; change: TaskTransition };
type EndAnswer = { ended: TaskRow | undefined; withdrawn: TaskInputRow[] };

/** One ending as endGroupUnheardOnPostgres takes it. */
const groupEntry = ({ id, change }: Ending, n: number) => ({
  n,
  id,
  to: change.to,
  status_message: change.statusMessage,
  result: jsonOrNull(change.result),
  error: jsonOrNull(change.error),
  from: change.from,
  runner: change.runner ?? null,
  actor: change.actor,
});

const endManyUnheard = defineQuery(
  function* (q, endings: Ending[]): Program<Array<EndAnswer | undefined>> {
    const now = Date.now();
    const answers =
      endings.length === 1
        ? yield* endUnheardOnPostgres(q, transitionValues(endings[0].id, endings[0].change, now))
        : yield* endGroupUnheardOnPostgres(q, [JSON.stringify(endings.map(groupEntry)), now, endings.map((ending) => ending.id)]);
    return answers.map((answer) =>
      answer.listening
        ? undefined
        : {
            ended: answer.task ? taskFromPostgres(q, answer.task) : undefined,
            withdrawn: answer.withdrawn.map((raw) => rowFromPostgres<TaskInputRow>(q.t.taskInputs, raw)),
          },
    );
  },
  { oneStatementOnPostgres: true },
);

/**
 * Tasks ending while a statement ending others runs go together in the next: thousands of short tasks
 * a second would otherwise each wait for a commit of their own.
 */
const endingGroups = new StatementGroups(endManyUnheard, 100, (ending: Ending) => ending.id);

/** A move between states: from which, to which, why, by whom, with what outcome. */
export interface TaskTransition {
  from: readonly TaskStatus[];
  to: TaskStatus;
  statusMessage: string | null;
  actor: string;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
  /** Only while this instance holds the task: a runner whose task was taken over records nothing. */
  runner?: string;
}

const transitionValues = (id: string, change: TaskTransition, now: number) => [
  id,
  change.to,
  change.statusMessage,
  now,
  jsonOrNull(change.result),
  jsonOrNull(change.error),
  JSON.stringify(change.from),
  change.runner ?? null,
  change.actor,
];

/**
 * Moves a task between states only when it is in one of `from`: the database decides every race.
 * Resolves with the updated row, or undefined when the task was not in `from` (or does not exist).
 */
export const transitionTask = defineQuery(
  function* (q, id: string, change: TaskTransition): Program<TaskRow | undefined> {
    const now = Date.now();
    let updated: TaskRow | undefined;
    if (q.dialect === 'pg') {
      const [raw] = yield* transitionOnPostgres(q, transitionValues(id, change, now));
      if (!raw) return undefined;
      updated = taskFromPostgres(q, raw);
    } else {
      const before = yield* first(selectStatusById(q), { id });
      [updated] = yield* rows(updateTaskStatus(q), {
        id,
        from: JSON.stringify(change.from),
        to: change.to,
        statusMessage: change.statusMessage,
        now,
        result: jsonOrNull(change.result),
        error: jsonOrNull(change.error),
        runner: change.runner ?? null,
      });
      if (!updated) return undefined;
      yield* changes(insertTaskEvent(q), { taskId: id, at: now, fromStatus: before?.status ?? null, toStatus: change.to, statusMessage: change.statusMessage, actor: change.actor });
    }
    const told = endEventOf(change.to);
    if (told) yield* notify(q, told, updated.userId, { task: eventTask(updated) }, now);
    return updated;
  },
  { transaction: 'immediate' },
);

/**
 * Ends a task on PostgreSQL in one statement with the tasks ending at the same time, one commit (no
 * BEGIN, no COMMIT, no separate reads), as transitionTask and withdrawPendingTaskInputs would in one
 * transaction: when nobody listens for its owner's notifications, so that there is no event of theirs
 * to record with it. Resolves once that commit is durable; undefined, having changed nothing, on SQLite
 * or when someone listens: then the caller's transaction does it.
 */
export function endTaskUnheard(id: string, change: TaskTransition): Promise<EndAnswer | undefined> {
  return getStore().dialect === 'pg' ? endingGroups.ask('', { id, change }) : Promise.resolve(undefined);
}

/**
 * A plain call's task stops answering its call: the call was answered before the task ended, or its
 * client stopped waiting. A later notifications/cancelled naming the call's id then cancels nothing (the
 * id may even be reused), and the timeline says what happened. False when the task answers no call.
 */
export const releaseCallTask = defineQuery(
  function* (q, id: string, userId: string, note: { statusMessage: string; actor: string }): Program<boolean> {
    const { tasks } = q.t;
    const [released] = yield* rows(
      q.db
        .update(tasks)
        .set({ callRequestId: null })
        .where(and(eq(tasks.id, id), eq(tasks.userId, userId), isNotNull(tasks.callRequestId)))
        .returning({ status: tasks.status }),
    );
    if (!released) return false;
    yield* changes(insertTaskEvent(q), { taskId: id, at: Date.now(), fromStatus: released.status, toStatus: released.status, ...note });
    return true;
  },
  { transaction: 'immediate' },
);

/** Records progress and/or a status message of a task that is still running. */
export const updateTaskProgress = defineQuery(function* (
  q,
  id: string,
  update: { progress?: number; progressTotal?: number | null; progressMessage?: string | null; statusMessage?: string },
): Program<TaskRow | undefined> {
  const { tasks } = q.t;
  return yield* first(
    q.db
      .update(tasks)
      .set({ ...update, lastUpdatedAt: nextUpdatedAt(q, Date.now()) })
      .where(and(eq(tasks.id, id), inArray(tasks.status, ['working', 'input_required'])))
      .returning(),
  );
});

const updateLiveFields = preparedQuery((q) =>
  q.db
    .update(q.t.tasks)
    .set({
      progress: sql`${sql.placeholder('progress')}`,
      progressTotal: sql`${sql.placeholder('progressTotal')}`,
      progressMessage: sql`${sql.placeholder('progressMessage')}`,
      statusMessage: sql`${sql.placeholder('statusMessage')}`,
      partialOutput: sql`${sql.placeholder('partialOutput')}`,
      lastUpdatedAt: nextUpdatedAt(q, q.dialect === 'pg' ? sql`cast(${sql.placeholder('now')} as bigint)` : sql.placeholder('now')),
    })
    .where(and(eq(q.t.tasks.id, sql.placeholder('id')), inArray(q.t.tasks.status, ['working', 'input_required']))),
);

/**
 * Stores running tasks' progress and status messages as they stand, in one transaction; for each row,
 * false when its task is no longer active. Written about once a second per task, so it runs prepared
 * and returns no rows.
 */
export const storeTasksProgress = defineQuery(
  function* (
    q,
    list: Array<Pick<TaskRow, 'id' | 'progress' | 'progressTotal' | 'progressMessage' | 'statusMessage' | 'partialOutput'>>,
    now: number,
  ): Program<boolean[]> {
    const stored: boolean[] = [];
    for (const { id, progress, progressTotal, progressMessage, statusMessage, partialOutput } of list) {
      stored.push((yield* changes(updateLiveFields(q), { id, progress, progressTotal, progressMessage, statusMessage, partialOutput, now })) > 0);
    }
    return stored;
  },
  { transaction: 'deferred' },
);

/** Marks a task as started again after a restart. */
/** Notes the upstream task that does a task's work (and its session), so that a restart follows it. */
export const setTaskUpstream = defineQuery(function* (q, id: string, upstreamTaskId: string, upstreamSessionId: string | null): Program<void> {
  const { tasks } = q.t;
  yield* changes(q.db.update(tasks).set({ upstreamTaskId, upstreamSessionId }).where(eq(tasks.id, id)));
});

export const incrementTaskAttempt = defineQuery(function* (q, id: string): Program<void> {
  const { tasks } = q.t;
  yield* changes(
    q.db
      .update(tasks)
      .set({ attempt: sql`${tasks.attempt} + 1` })
      .where(eq(tasks.id, id)),
  );
});

export const listTasksByStatus = defineQuery(function* (q, statuses: readonly TaskStatus[]): Program<TaskRow[]> {
  const { tasks } = q.t;
  return yield* rows(
    q.db
      .select()
      .from(tasks)
      .where(inArray(tasks.status, [...statuses]))
      .orderBy(asc(tasks.createdAt)),
  );
});

/**
 * Deletes every task whose ttl has run out (their events go with them), in one transaction with the
 * `task.expired` events it writes: an event that cannot be written keeps its task for the next sweep,
 * and on PostgreSQL the events' advisory lock holds until they commit, which keeps them in id order.
 */
export const deleteExpiredTasks = defineQuery(
  function* (q, now: number): Program<Array<{ id: string; userId: string }>> {
    const { tasks } = q.t;
    const deleted = yield* rows(q.db.delete(tasks).where(lte(tasks.expiresAt, now)).returning());
    for (const task of deleted) {
      // A task that ran out of time still working or waiting on a person ended without a word: say so.
      if (task.status === 'working' || task.status === 'input_required') yield* notify(q, 'task.expired', task.userId, { task: eventTask(task) }, now);
    }
    // After every write: a sweep whose event failed leaves the counts as they were.
    for (const task of deleted) storedCounts.update(task.userId, (n) => n - 1);
    return deleted.map(({ id, userId }) => ({ id, userId }));
  },
  { transaction: 'immediate' },
);

export const listTaskEventsByTaskId = defineQuery(function* (q, taskId: string): Program<TaskEventRow[]> {
  const { taskEvents } = q.t;
  return yield* rows(q.db.select().from(taskEvents).where(eq(taskEvents.taskId, taskId)).orderBy(asc(taskEvents.id)));
});

/** How many live tasks a user has in each status, for the dashboard's filters and badges. */
export const countTasksByStatusForUser = defineQuery(function* (q, userId: string, notExpiredAt: number): Program<Partial<Record<TaskStatus, number>>> {
  const { tasks } = q.t;
  const counted = yield* rows(
    q.db
      .select({ status: tasks.status, n: count() })
      .from(tasks)
      .where(and(eq(tasks.userId, userId), gt(tasks.expiresAt, notExpiredAt)))
      .groupBy(tasks.status),
  );
  return Object.fromEntries(counted.map((row) => [row.status, row.n]));
});

/**
 * The user's stored tasks, ended ones included, counted up to `atMost`: the count stops there, so a
 * user with a million tasks costs no more to check than one at the limit.
 */
const storedByUserUpTo = preparedQuery((q) => {
  const stored = q.db.select({ one: sql`1` }).from(q.t.tasks).where(eq(q.t.tasks.userId, sql.placeholder('userId'))).limit(sql.placeholder('atMost')).as('stored');
  return q.db.select({ n: count() }).from(stored);
});

/** The user's working or waiting tasks: at most the active limit of them, through the (user, status) index. */
const countActiveByUser = preparedQuery((q) =>
  q.db
    .select({ n: count() })
    .from(q.t.tasks)
    .where(and(eq(q.t.tasks.userId, sql.placeholder('userId')), inArray(q.t.tasks.status, ['working', 'input_required']))),
);

const activeStatuses: TaskStatus[] = ['working', 'input_required'];

/**
 * Extends this instance's hold on the tasks it runs; resolves with the ids still held (one that is not
 * was taken over by another instance while this one stalled, and must stop here).
 */
export const renewTaskLeases = defineQuery(function* (q, runner: string, taskIds: string[], until: number): Program<string[]> {
  if (taskIds.length === 0) return [];
  const { tasks } = q.t;
  const renewed = yield* rows(
    q.db
      .update(tasks)
      .set({ leaseExpiresAt: until })
      .where(and(eq(tasks.runner, runner), inArray(tasks.id, taskIds), inArray(tasks.status, activeStatuses)))
      .returning({ id: tasks.id }),
  );
  return renewed.map((row) => row.id);
});

/**
 * Takes the active tasks no living instance holds (its lease ran out, or was handed back), or with
 * `everyActive` every active task (one process alone on its SQLite file, at start). The update is the
 * whole decision: of two instances claiming at once, each task goes to exactly one.
 */
export const claimTaskLeases = defineQuery(function* (q, runner: string, now: number, until: number, everyActive: boolean): Program<TaskRow[]> {
  const { tasks } = q.t;
  return yield* rows(
    q.db
      .update(tasks)
      .set({ runner, leaseExpiresAt: until })
      .where(and(inArray(tasks.status, activeStatuses), everyActive ? undefined : or(isNull(tasks.leaseExpiresAt), lte(tasks.leaseExpiresAt, now))))
      .returning(),
  );
});

/** Hands this instance's tasks back at once (it is stopping): another instance takes them over. */
export const releaseTaskLeases = defineQuery(function* (q, runner: string): Program<number> {
  const { tasks } = q.t;
  return yield* changes(
    q.db
      .update(tasks)
      .set({ leaseExpiresAt: 0 })
      .where(and(eq(tasks.runner, runner), inArray(tasks.status, activeStatuses))),
  );
});
