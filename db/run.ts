import { createHash } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { getEnv } from '@/lib/env';
import { getStore, postgresReady, type Db, type Dialect, type Store, type Tables } from './client';
import { DatabaseFileGone, isSqliteBusy } from './errors';

/**
 * Every query is written once, as a generator (a "program") that yields the statements it runs and
 * receives their rows. The runner executes them the way each database wants:
 *
 * - SQLite: synchronously, inside one better-sqlite3 transaction when asked. No other request can run
 *   between two statements of a program, exactly as when the queries were plain synchronous calls, so
 *   the embedded path keeps its speed and its isolation.
 * - PostgreSQL: each statement awaited on one pooled connection, inside BEGIN … COMMIT when asked.
 *
 * Programs compose with `yield*`, so several of them run in one transaction; the exported functions
 * are async on both databases.
 */
export type Step =
  | { kind: 'rows'; query: unknown; params?: Record<string, unknown> }
  | { kind: 'changes'; query: unknown; params?: Record<string, unknown> };

export type Program<T> = Generator<Step, T, unknown>;

/** What a program builds its statements with: the connection (or transaction) and that database's tables. */
export interface QueryContext {
  db: Db;
  t: Tables;
  dialect: Dialect;
  /** The store's own connection (SQLite) or pool (PostgreSQL), which statements are prepared on once. */
  root: Db;
  /** PostgreSQL inside a transaction: the pooled connection the transaction runs on. */
  client?: unknown;
}

/** Anything that returns rows: a query builder or a prepared statement, with placeholder values. */
interface ReturnsRows<T> {
  all(params?: Record<string, unknown>): T[];
}

/** The rows a select, or an insert/update/delete with RETURNING, gives back. */
export function* rows<T>(query: ReturnsRows<T>, params?: Record<string, unknown>): Program<T[]> {
  return (yield { kind: 'rows', query, params }) as T[];
}

/** The first row, or undefined. */
export function* first<T>(query: ReturnsRows<T>, params?: Record<string, unknown>): Program<T | undefined> {
  return (yield* rows(query, params))[0];
}

/** How many rows an insert, update or delete without RETURNING changed. */
export function* changes(query: { run(params?: Record<string, unknown>): unknown }, params?: Record<string, unknown>): Program<number> {
  return (yield { kind: 'changes', query, params }) as number;
}

/**
 * Serialises transactions that check a limit and then write (two creations must not both take the
 * last place). SQLite's write transactions are serial already; PostgreSQL takes a transaction-scoped
 * advisory lock on the key.
 */
export function* lock(q: QueryContext, key: string): Program<void> {
  if (q.dialect !== 'pg') return;
  const take = sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`;
  yield { kind: 'changes', query: { execute: () => (q.db as unknown as { execute(query: SQL): Promise<unknown> }).execute(take) } };
}

interface Executes {
  execute(query: SQL): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/**
 * The rows a plain SQL statement returns, run on the program's connection (its transaction's, inside
 * one): for the tables that exist on PostgreSQL only, which have no drizzle table to build with.
 */
export function* selected<T>(q: QueryContext, query: SQL): Program<T[]> {
  const db = q.db as unknown as Executes;
  return ((yield { kind: 'rows', query: { execute: () => db.execute(query) } }) as { rows: T[] }).rows;
}

/** How many rows a plain SQL statement changed (PostgreSQL only, like `selected`). */
export function* changed(q: QueryContext, query: SQL): Program<number> {
  const db = q.db as unknown as Executes;
  return (yield { kind: 'changes', query: { execute: () => db.execute(query) } }) as number;
}

export type Query<A extends unknown[], R> = ((...args: A) => Promise<R>) & {
  /** The same query as a program, to run inside another program's transaction. */
  program: (q: QueryContext, ...args: A) => Program<R>;
};

export interface QueryOptions<A extends unknown[] = unknown[], R = unknown> {
  /**
   * Run as one transaction. 'immediate' takes SQLite's write lock at BEGIN, for programs that read
   * and then write on what they read.
   */
  transaction?: 'deferred' | 'immediate';
  /** On PostgreSQL the program runs one statement, whose own commit is enough: no BEGIN and COMMIT around it. */
  oneStatementOnPostgres?: boolean;
  /**
   * What a query that reads through a cache answers from it, without a program run (undefined: not
   * there). Every request reads its token and its session, and a hit then costs a lookup, not a query.
   */
  fromCache?: (...args: A) => R | undefined;
}

/** Makes a program into an async query function (and keeps the program for composition). */
export function defineQuery<A extends unknown[], R>(program: (q: QueryContext, ...args: A) => Program<R>, options: QueryOptions<A, R> = {}): Query<A, R> {
  const run = (...args: A): Promise<R> => {
    const cached = options.fromCache?.(...args);
    if (cached !== undefined) return Promise.resolve(cached);
    const store = getStore();
    if (store.dialect === 'sqlite') {
      const make = (q: QueryContext) => program(q, ...args);
      if (options.transaction && getEnv().SQLITE_GROUP_COMMIT && !store.sqlite.inTransaction) return joinCommitGroup(store, make);
      return runSqliteWaitingForLock(store, make, options.transaction);
    }
    return runPostgres(store, (q) => program(q, ...args), options.oneStatementOnPostgres ? undefined : options.transaction);
  };
  return Object.assign(run, { program });
}

/** Runs a program made on the spot (a caller's composition of several queries) as one transaction. */
export function inTransaction<R>(program: (q: QueryContext) => Program<R>): Promise<R> {
  return defineQuery(program, { transaction: 'immediate' })();
}

type SqliteStore = Extract<Store, { dialect: 'sqlite' }>;
type PostgresStore = Extract<Store, { dialect: 'pg' }>;

const sqliteContexts = new WeakMap<Db, QueryContext>();

/** Between looks at a write lock another process holds: short at first, at most this long. */
const firstBusyPauseMs = 2;
const longestBusyPauseMs = 50;

/**
 * Runs a program on SQLite at once, as before; only when another process holds the write lock (a
 * backup, a migration, `sqlite3` at a prompt) does it wait, asynchronously, until the lock is let go or
 * DATABASE_BUSY_TIMEOUT_MS has passed: meanwhile every other request is served (reads go on in WAL
 * mode). Then the busy error is thrown, and answered as a clear refusal. A program is tried again only
 * when its failed try changed nothing: a transaction is rolled back whole; outside one, SQLite's count
 * of changed rows tells. Called inside another program's transaction, it throws at once.
 */
function runSqliteWaitingForLock<R>(store: SqliteStore, make: (q: QueryContext) => Program<R>, transaction?: 'deferred' | 'immediate'): Promise<R> {
  const nested = store.sqlite.inTransaction;
  const changesBefore = transaction || nested ? 0 : totalChanges(store);
  try {
    return Promise.resolve(runSqlite(store, make, transaction));
  } catch (error) {
    if (nested || !isSqliteBusy(error) || (!transaction && totalChanges(store) !== changesBefore)) return Promise.reject(error);
    return retryWhenLockFree(store, make, transaction, error);
  }
}

async function retryWhenLockFree<R>(store: SqliteStore, make: (q: QueryContext) => Program<R>, transaction: 'deferred' | 'immediate' | undefined, busy: unknown): Promise<R> {
  const deadline = Date.now() + getEnv().DATABASE_BUSY_TIMEOUT_MS;
  let lastError = busy;
  while (Date.now() < deadline) {
    await lockLetGo(store, deadline);
    if (store.sqlite.inTransaction || !store.sqlite.open) break;
    const changesBefore = transaction ? 0 : totalChanges(store);
    try {
      return runSqlite(store, make, transaction);
    } catch (error) {
      lastError = error;
      if (!isSqliteBusy(error) || (!transaction && totalChanges(store) !== changesBefore)) throw error;
    }
  }
  throw lastError;
}

/**
 * One watcher per connection looks at the lock for every waiting write (taking and dropping it, with a
 * growing pause), so that many waiting writes cost what one does; resolves when the lock was free, or
 * at the caller's deadline.
 */
const lockWatchers = new WeakMap<Database.Database, { letGo: Promise<void>; until: number }>();

async function lockLetGo(store: SqliteStore, deadline: number): Promise<void> {
  let watcher = lockWatchers.get(store.sqlite);
  if (!watcher) {
    const watching = { letGo: Promise.resolve(), until: deadline };
    watching.letGo = watchLock(store.sqlite, watching).finally(() => lockWatchers.delete(store.sqlite));
    lockWatchers.set(store.sqlite, watching);
    watcher = watching;
  }
  watcher.until = Math.max(watcher.until, deadline);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([watcher.letGo, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))))]);
  clearTimeout(timer);
}

async function watchLock(sqlite: Database.Database, watching: { until: number }): Promise<void> {
  for (let pause = firstBusyPauseMs; Date.now() < watching.until; pause = Math.min(pause * 2, longestBusyPauseMs)) {
    await new Promise((resolve) => setTimeout(resolve, pause));
    if (!sqlite.open || sqlite.inTransaction) return;
    try {
      sqlite.exec('BEGIN IMMEDIATE; ROLLBACK');
      return;
    } catch (error) {
      if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
      if (!isSqliteBusy(error)) return;
    }
  }
}

/**
 * Group commit. A write transaction asked for while others wait for the same turn of the event loop runs
 * with them in one SQLite transaction, each inside a savepoint of its own: one that throws is rolled back
 * alone and rejects, the others go on. Then one COMMIT, and only after it is each one resolved, so a write
 * is acknowledged only once it is as durable as SQLITE_SYNCHRONOUS makes a commit; a COMMIT that fails
 * rejects them all, having kept none. Under load many writes share a commit's work (the pages every write
 * touches, such as an index's last leaf, are written once per group instead of once per write, and with
 * SQLITE_SYNCHRONOUS=full one flush to disk serves them all); a lone write waits for one turn of the event
 * loop. Reads do not wait: they run at once, as before.
 */
interface GroupedWrite {
  make: (q: QueryContext) => Program<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const commitGroups = new WeakMap<Database.Database, GroupedWrite[]>();

function joinCommitGroup<R>(store: SqliteStore, make: (q: QueryContext) => Program<R>): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    let group = commitGroups.get(store.sqlite);
    if (!group) {
      const started: GroupedWrite[] = [];
      group = started;
      commitGroups.set(store.sqlite, started);
      setImmediate(() => {
        commitGroups.delete(store.sqlite);
        try {
          commitGroup(store, started);
        } catch (error) {
          // The lock could not be taken for a reason other than another's hold (the connection closed).
          for (const write of started) write.reject(fileGoneOr(store, error));
        }
      });
    }
    group.push({ make, resolve: resolve as (value: unknown) => void, reject });
  });
}

function commitGroup(store: SqliteStore, group: GroupedWrite[]): void {
  const { sqlite } = store;
  const control = groupControl(sqlite);
  // One write alone, or the lock held elsewhere (another process, a transaction still open here): each goes
  // its own way, which waits for the lock as a lone write does.
  if (group.length === 1 || sqlite.inTransaction || !beganImmediate(control)) {
    for (const write of group) runSqliteWaitingForLock(store, write.make, 'immediate').then(write.resolve, write.reject);
    return;
  }
  const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
  try {
    for (const write of group) {
      control.savepoint.run();
      try {
        outcomes.push({ ok: true, value: runSqlite(store, write.make) });
        control.release.run();
      } catch (error) {
        control.rollbackTo.run();
        control.release.run();
        outcomes.push({ ok: false, error });
      }
    }
    control.commit.run();
  } catch (error) {
    if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
    const failure = fileGoneOr(store, error);
    for (const write of group) write.reject(failure);
    return;
  }
  group.forEach((write, index) => {
    const outcome = outcomes[index];
    if (outcome.ok) write.resolve(outcome.value);
    else write.reject(outcome.error);
  });
}

/** The statements that frame a group, prepared once per connection. */
interface GroupControl {
  begin: Database.Statement;
  savepoint: Database.Statement;
  release: Database.Statement;
  rollbackTo: Database.Statement;
  commit: Database.Statement;
}

const groupControls = new WeakMap<Database.Database, GroupControl>();

function groupControl(sqlite: Database.Database): GroupControl {
  let control = groupControls.get(sqlite);
  if (!control) {
    control = {
      begin: sqlite.prepare('BEGIN IMMEDIATE'),
      savepoint: sqlite.prepare('SAVEPOINT grouped_write'),
      release: sqlite.prepare('RELEASE grouped_write'),
      rollbackTo: sqlite.prepare('ROLLBACK TO grouped_write'),
      commit: sqlite.prepare('COMMIT'),
    };
    groupControls.set(sqlite, control);
  }
  return control;
}

/** Takes the write lock for a group; false when another process holds it. */
function beganImmediate(control: GroupControl): boolean {
  try {
    control.begin.run();
    return true;
  } catch (error) {
    if (isSqliteBusy(error)) return false;
    throw error;
  }
}

const totalChangesStatements = new WeakMap<Database.Database, Database.Statement>();

function totalChanges(store: Pick<SqliteStore, 'sqlite'>): number {
  let statement = totalChangesStatements.get(store.sqlite);
  if (!statement) {
    statement = store.sqlite.prepare('SELECT total_changes()').pluck();
    totalChangesStatements.set(store.sqlite, statement);
  }
  return statement.get() as number;
}

/**
 * How many rows this program's SQLite connection has inserted, changed or deleted since it opened
 * (SQLite's total_changes(), which a rollback does not lower); undefined on PostgreSQL and inside a
 * transaction, whose reads may see what is not committed yet. A row read while the count stays the same
 * is still the row this connection would read: every write of this process goes through it, and other
 * connections' writes are seen through data_version (db/cache.ts).
 */
export function sqliteWriteCount(q: QueryContext): number | undefined {
  if (q.dialect !== 'sqlite') return undefined;
  const sqlite = (q.root as unknown as { $client: Database.Database }).$client;
  return sqlite.inTransaction ? undefined : totalChanges({ sqlite });
}

/** The same count on the store queries use now, for a read answered before any program runs. */
export function currentSqliteWriteCount(): number | undefined {
  const store = getStore();
  return store.dialect === 'sqlite' && !store.sqlite.inTransaction ? totalChanges(store) : undefined;
}

function runSqlite<R>(store: SqliteStore, make: (q: QueryContext) => Program<R>, transaction?: 'deferred' | 'immediate'): R {
  let q = sqliteContexts.get(store.db);
  if (!q) {
    q = { db: store.db, t: store.tables, dialect: 'sqlite', root: store.db };
    sqliteContexts.set(store.db, q);
  }
  const context = q;
  const drive = () => driveSync(make(context));
  try {
    // Nested (a query called while another's transaction is open) becomes a savepoint.
    return transaction ? store.sqlite.transaction(drive)[transaction]() : drive();
  } catch (error) {
    throw fileGoneOr(store, error);
  }
}

/** A write refused because the database file is gone reads as such; any other error as it is. */
function fileGoneOr(store: SqliteStore, error: unknown): unknown {
  const code = (error as { code?: unknown }).code;
  if (store.fileGone && typeof code === 'string' && code.startsWith('SQLITE_READONLY')) return new DatabaseFileGone('the database file is gone', { cause: error });
  return error;
}

function driveSync<R>(program: Program<R>): R {
  let next = program.next();
  while (!next.done) {
    let value: unknown;
    try {
      value = executeSqlite(next.value);
    } catch (error) {
      next = program.throw(error);
      continue;
    }
    next = program.next(value);
  }
  return next.value;
}

function executeSqlite(step: Step): unknown {
  switch (step.kind) {
    case 'rows':
      return (step.query as ReturnsRows<unknown>).all(step.params);
    case 'changes':
      return (step.query as { run(params?: Record<string, unknown>): { changes: number } }).run(step.params).changes;
  }
}

async function runPostgres<R>(store: PostgresStore, make: (q: QueryContext) => Program<R>, transaction?: 'deferred' | 'immediate'): Promise<R> {
  if (!store.migrated) await postgresReady(store);
  if (!transaction) return driveAsync(make({ db: store.db, t: store.tables, dialect: 'pg', root: store.db }));
  return store.db.transaction(async (tx) => {
    const client = (tx as unknown as { session: { client: unknown } }).session.client;
    return driveAsync(make({ db: tx as unknown as Db, t: store.tables, dialect: 'pg', root: store.db, client })) as never;
  }) as unknown as Promise<R>;
}

async function driveAsync<R>(program: Program<R>): Promise<R> {
  let next = program.next();
  while (!next.done) {
    let value: unknown;
    try {
      value = await executePostgres(next.value);
    } catch (error) {
      next = program.throw(error);
      continue;
    }
    next = program.next(value);
  }
  return next.value;
}

interface PostgresExecutable {
  execute(params?: Record<string, unknown>): Promise<unknown>;
}

async function executePostgres(step: Step): Promise<unknown> {
  switch (step.kind) {
    case 'rows':
      return (step.query as PostgresExecutable).execute(step.params);
    case 'changes':
      return ((await (step.query as PostgresExecutable).execute(step.params)) as { rowCount: number | null }).rowCount ?? 0;
  }
}

/**
 * A statement built once per store, for the statements every request runs: building a drizzle query
 * costs more than running it. Parameters are `sql.placeholder(name)`s. On SQLite it is prepared on the
 * connection. On PostgreSQL it is a named statement, which each pooled connection parses and plans once
 * (the server keeps it per connection); inside a transaction it runs on the transaction's connection.
 */
export function preparedQuery<T>(build: (q: QueryContext) => T): (q: QueryContext) => T {
  const byStore = new WeakMap<Db, T>();
  return (q) => {
    let query = byStore.get(q.root);
    if (query === undefined) {
      const built = build({ ...q, db: q.root, client: undefined }) as { prepare(name?: string): T; toSQL(): { sql: string } };
      query = q.dialect === 'pg' ? built.prepare(statementName(built.toSQL().sql)) : built.prepare();
      byStore.set(q.root, query);
    }
    // drizzle's node-postgres statement runs on its `client` (the pool it was prepared on): a transaction's
    // statements must run on the transaction's connection, so they get a view of it with that client.
    return q.client === undefined ? query : (Object.create(query as object, { client: { value: q.client } }) as T);
  };
}

/**
 * A named statement's name, from its text: every copy of this module in the process (the production
 * server's bundle and the Next.js app's chunks share one pool) gives the same statement the same name,
 * and different statements different ones, as PostgreSQL requires on a connection.
 */
function statementName(text: string): string {
  return `mcp_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
}

/**
 * A statement written in PostgreSQL's own SQL (`$1`, `$2`… for its values), named so that each pooled
 * connection parses and plans it once, run on the program's connection: the rows as PostgreSQL sends
 * them (column names as in the database, bigint as text).
 */
export function postgresStatement<T>(text: string, options: { plannedEachCall?: boolean } = {}): (q: QueryContext, values: unknown[]) => Program<T[]> {
  // Unnamed, a statement is planned for the values of each call; named, after a few calls with one plan kept.
  const name = options.plannedEachCall ? undefined : statementName(text);
  return function* (q, values) {
    const client = (q.client ?? (q.root as unknown as { $client: pg.Pool }).$client) as pg.Pool;
    return ((yield { kind: 'rows', query: { execute: () => client.query({ name, text, values }) } }) as { rows: T[] }).rows;
  };
}

/** The larger of two values, in the program's SQL dialect. */
export function greatest(q: QueryContext, a: unknown, b: unknown): SQL {
  return q.dialect === 'pg' ? sql`greatest(${a}, ${b})` : sql`max(${a}, ${b})`;
}
