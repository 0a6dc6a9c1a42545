import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { getEnv } from '@/lib/env';
import * as schema from './schema';

export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

const migrationsFolder = path.join(process.cwd(), 'drizzle');

/**
 * Opens (creating the folder and file when needed) and migrates a database file. Queries read
 * RETURNING rows with .all(), never .get(): a statement left unfinished by .get() keeps SQLite from
 * checkpointing, and the WAL then grows with every progress update.
 */
export function openDatabase(databasePath: string): Db {
  if (databasePath !== ':memory:') createPrivateFile(databasePath);
  const sqlite = new Database(databasePath);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // After a checkpoint the WAL shrinks back to this size instead of staying at its largest.
  sqlite.pragma('journal_size_limit = 67108864');
  const db = drizzle(sqlite, { schema });
  migrate(db, { migrationsFolder });
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

/**
 * The server's connection, opened on first use (never at build time) and cached on globalThis so that
 * dev reloads and separately bundled routes share it.
 */
const globalForDb = globalThis as unknown as { __mcpTaskServerDb?: { path: string; db: Db } };

export function getDb(): Db {
  const databasePath = getEnv().DATABASE_PATH;
  const cached = globalForDb.__mcpTaskServerDb;
  if (cached && cached.path === databasePath) return cached.db;
  const db = openDatabase(databasePath);
  globalForDb.__mcpTaskServerDb = { path: databasePath, db };
  return db;
}

/**
 * A query built and prepared once per connection, for the statements every request runs: building a
 * drizzle query costs more than running it. Parameters are `sql.placeholder(name)`s.
 */
export function preparedQuery<T>(build: (db: Db) => T): () => T {
  const byConnection = new WeakMap<Db, T>();
  return () => {
    const db = getDb();
    let query = byConnection.get(db);
    if (query === undefined) {
      query = build(db);
      byConnection.set(db, query);
    }
    return query;
  };
}
