import fs from 'node:fs';
import path from 'node:path';
import Database from './sqlite';
import { drizzle as drizzleSqlite, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate as migrateSqlite } from 'drizzle-orm/better-sqlite3/migrator';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { getEnv } from '@/lib/env';
import * as schema from './schema';
import { closeNotifications } from './notify';
import * as pgSchema from './schema.pg';

/**
 * The type every query is written against. On PostgreSQL the same builders run on the tables of
 * db/schema.pg.ts, which have the same names, columns and TypeScript types (tests/unit/schema-pg.test.ts
 * keeps the two in step); only db/run.ts executes them, the right way for each database.
 */
export type Db = BetterSQLite3Database<typeof schema> & { $client: Database };
export type Tables = typeof schema;
export type Dialect = 'sqlite' | 'pg';

/** One open database: SQLite (one connection, synchronous) or a PostgreSQL pool. */
export type Store =
  /** `fileGone`: the file was deleted or moved and could not be put back; the connection only reads. */
  | { dialect: 'sqlite'; db: Db; tables: Tables; sqlite: Database; key: string; fileGone?: boolean }
  | { dialect: 'pg'; db: Db; tables: Tables; pool: pg.Pool; migrated: boolean; migrating: Promise<void> | null; key: string };

/**
 * Opens (creating the folder and file when needed) and migrates a database file. Queries read
 * RETURNING rows with .all(), never .get(): a statement left unfinished by .get() keeps SQLite from
 * checkpointing, and the WAL then grows with every progress update.
 */
export function openDatabase(databasePath: string): Db {
  if (databasePath !== ':memory:') createPrivateFile(databasePath);
  const sqlite = new Database(databasePath);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma(`synchronous = ${getEnv().SQLITE_SYNCHRONOUS === 'full' ? 'FULL' : 'NORMAL'}`);
  sqlite.pragma('foreign_keys = ON');
  // Opening waits for another process's write lock (nothing is served yet).
  sqlite.pragma('busy_timeout = 5000');
  // After a checkpoint the WAL shrinks back to this size instead of staying at its largest.
  sqlite.pragma('journal_size_limit = 67108864');
  const db = drizzleSqlite(sqlite, { schema });
  migrateSqlite(db, { migrationsFolder: path.join(process.cwd(), 'drizzle') });
  // From here on, never wait for it synchronously: that would hold every request of this process. A busy
  // write is retried asynchronously instead (db/run.ts), up to DATABASE_BUSY_TIMEOUT_MS.
  sqlite.pragma('busy_timeout = 0');
  return db as Db;
}

/**
 * Creates the database file (and its folder) readable by this user only, before SQLite opens it: it holds
 * password and token hashes and every task. SQLite gives its -wal and -shm files the same mode. Existing
 * files and folders keep theirs.
 */
function createPrivateFile(databasePath: string): void {
  const file = path.resolve(databasePath);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    fs.closeSync(fs.openSync(file, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Any number: all instances of this server agree on it, so one of them migrates while the others wait. */
const MIGRATION_LOCK = 7_357_001;

/**
 * Migrates a PostgreSQL database once however many instances start together: the first to take the
 * advisory lock applies what is missing; the others wait for it, then find nothing left to do.
 */
export async function migratePostgres(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await migratePg(drizzlePg(client), { migrationsFolder: path.join(process.cwd(), 'drizzle-pg') });
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
  }
}

/** PostgreSQL returns bigint columns and count(*) as strings; every one of ours fits a double exactly. */
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

function openPostgres(url: string): Store {
  // A server that does not answer fails a request within seconds (answered 503), instead of holding it.
  const pool = new pg.Pool({ connectionString: url, max: getEnv().DATABASE_POOL_SIZE, connectionTimeoutMillis: 5_000 });
  // An idle connection the server dropped is replaced on next use; the pool must not crash the process.
  pool.on('error', (error) => console.error('PostgreSQL connection lost:', error.message));
  const db = drizzlePg(pool, { schema: pgSchema }) as unknown as Db;
  return { dialect: 'pg', db, tables: pgSchema as unknown as Tables, pool, migrated: false, migrating: null, key: url };
}

/**
 * Resolves once the PostgreSQL schema is current. A database that is down at start is migrated on the
 * first query after it is back: a failed attempt is forgotten, not kept as the answer.
 */
export function postgresReady(store: Extract<Store, { dialect: 'pg' }>): Promise<void> {
  store.migrating ??= migratePostgres(store.pool).then(
    () => {
      store.migrated = true;
    },
    (error: unknown) => {
      store.migrating = null;
      throw error;
    },
  );
  return store.migrating;
}

/**
 * The server's database, opened on first use (never at build time) and cached on globalThis so that
 * dev reloads and separately bundled routes share it: PostgreSQL when DATABASE_URL is set, otherwise
 * the SQLite file at DATABASE_PATH.
 */
const globalForDb = globalThis as unknown as { __mcpTaskServerStore?: Store };

export function getStore(): Store {
  const env = getEnv();
  const key = env.DATABASE_URL ?? env.DATABASE_PATH;
  const cached = globalForDb.__mcpTaskServerStore;
  if (cached && cached.key === key) return cached;
  let store: Store;
  if (env.DATABASE_URL) {
    store = openPostgres(env.DATABASE_URL);
  } else {
    const db = openDatabase(env.DATABASE_PATH);
    store = { dialect: 'sqlite', db, tables: schema, sqlite: db.$client, key };
  }
  globalForDb.__mcpTaskServerStore = store;
  return store;
}

/** The open database's drizzle object, typed as SQLite's: for unit tests that read the SQLite file directly. */
export function getDb(): Db {
  return getStore().db;
}

/** Closes the database (tests, and a server that stops). */
export async function closeStore(): Promise<void> {
  const store = globalForDb.__mcpTaskServerStore;
  if (!store) return;
  globalForDb.__mcpTaskServerStore = undefined;
  if (store.dialect === 'sqlite') {
    store.sqlite.close();
  } else {
    await closeNotifications();
    await store.pool.end();
  }
}
