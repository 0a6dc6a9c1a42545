/**
 * Copies a SQLite database into an empty PostgreSQL database with the schema of db/schema.pg.ts, for
 * `npm run db:copy`. Values travel as SQLite stores them (JSON as its exact text, integers as 64-bit),
 * so that the PostgreSQL rows read back identical; nothing is written unless every table's row count
 * matches at the end.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from './sqlite';
import { getTableName, is } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import pg from 'pg';
import * as pgSchema from './schema.pg';

const migrationsFolder = path.join(process.cwd(), 'drizzle-pg');

/** A reason to stop that the person running the copy can act on; its message is one line. */
export class CopyError extends Error {
  constructor(
    message: string,
    readonly counts: TableCount[] = [],
  ) {
    super(message);
  }
}

export interface TableCount {
  table: string;
  sqliteRows: number;
  postgresRows: number;
}

interface CopiedTable {
  name: string;
  columns: string[];
  identityColumn?: string;
}

/** A PostgreSQL URL as it may be shown: without its password or query parameters (which may hold one). */
export function describePostgresUrl(url: URL): string {
  const user = url.username ? `${url.username}@` : '';
  return `${url.protocol}//${user}${url.host}${url.pathname}`;
}

/** Every table of the PostgreSQL schema, each after the tables its foreign keys point to. */
function tablesInDependencyOrder(): CopiedTable[] {
  const tables = (Object.values(pgSchema) as unknown[]).filter((value): value is PgTable => is(value, PgTable));
  const ordered: PgTable[] = [];
  const visit = (table: PgTable) => {
    if (ordered.includes(table)) return;
    for (const key of getTableConfig(table).foreignKeys) {
      const parent = key.reference().foreignTable;
      if (parent !== table) visit(parent);
    }
    ordered.push(table);
  };
  tables.forEach(visit);
  return ordered.map((table) => {
    const { columns } = getTableConfig(table);
    return { name: getTableName(table), columns: columns.map((column) => column.name), identityColumn: columns.find((column) => column.generatedIdentity)?.name };
  });
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

/**
 * The SQLite file must have exactly the tables and columns of the PostgreSQL schema: a table or a
 * column the copy does not know would be left behind, and one it expects but cannot find means the
 * file was written by an older version that has not migrated it yet.
 */
function checkSqliteSchema(sqlite: Database, sqlitePath: string, tables: CopiedTable[]): void {
  const sqliteTables = (sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name <> '__drizzle_migrations'").pluck().all() as string[]).sort();
  const expected = tables.map((table) => table.name).sort();
  const unknown = sqliteTables.filter((name) => !expected.includes(name));
  if (unknown.length > 0) throw new CopyError(`${sqlitePath} has tables this version cannot copy (${unknown.join(', ')}): use the version of the server that wrote it.`);
  for (const table of tables) {
    const columns = (sqlite.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table.name) as string[]).sort();
    if (columns.join() !== [...table.columns].sort().join()) {
      throw new CopyError(`${sqlitePath} is not at the current schema (table ${table.name}): start the server on it once so that it migrates, then copy again.`);
    }
  }
}

/** The tables of the target that hold a row, apart from drizzle's record of applied migrations. */
async function tablesWithRows(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ schemaname: string; tablename: string }>(
    "SELECT schemaname, tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND NOT (schemaname = 'drizzle' AND tablename = '__drizzle_migrations') ORDER BY 1, 2",
  );
  const holding: string[] = [];
  for (const { schemaname, tablename } of rows) {
    const name = `${quote(schemaname)}.${quote(tablename)}`;
    const result = await client.query<{ found: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${name}) AS found`);
    if (result.rows[0].found) holding.push(schemaname === 'public' ? tablename : `${schemaname}.${tablename}`);
  }
  return holding;
}

async function refuseUnlessEmpty(client: pg.Client, target: string): Promise<void> {
  const holding = await tablesWithRows(client);
  if (holding.length > 0) {
    throw new CopyError(`Refusing to copy: ${target} is not empty (rows in ${holding.join(', ')}); db:copy fills an empty database only.`);
  }
}

/** A PostgreSQL error as it may be shown: values quoted at its end may be a hash or a payload. */
export function describePostgresError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return describePostgresError(error.errors[0]);
  if (!(error instanceof Error)) return String(error);
  const message = error.message.replace(/: ".*"$/s, '') || ('code' in error ? String(error.code) : error.name);
  return 'code' in error && typeof error.code === 'string' && /^[0-9A-Z]{5}$/.test(error.code) ? `${message} (SQLSTATE ${error.code})` : message;
}

async function insertRows(client: pg.Client, table: CopiedTable, sqlite: Database): Promise<void> {
  // PostgreSQL takes at most 65535 parameters in one statement.
  const rowsPerBatch = Math.max(1, Math.min(1000, Math.floor(65_535 / table.columns.length)));
  const columnList = table.columns.map(quote).join(', ');
  // 64-bit integers as BigInt: a number would round those beyond 2^53.
  const rows = sqlite.prepare(`SELECT ${columnList} FROM ${quote(table.name)} ORDER BY rowid`).raw(true).safeIntegers(true).iterate() as IterableIterator<unknown[]>;
  let batch: unknown[][] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const values = batch.map((row, rowIndex) => `(${row.map((_, columnIndex) => `$${rowIndex * table.columns.length + columnIndex + 1}`).join(', ')})`);
    const parameters = batch.flat().map((value) => (typeof value === 'bigint' ? value.toString() : value));
    await client.query(`INSERT INTO ${quote(table.name)} (${columnList}) VALUES ${values.join(', ')}`, parameters);
    batch = [];
  };
  for (const row of rows) {
    batch.push(row);
    if (batch.length === rowsPerBatch) await flush();
  }
  await flush();
}

/**
 * SQLite's AUTOINCREMENT never gives an id twice, not even one whose row is gone (session_messages ids
 * are SSE event ids that clients resume from), so each sequence continues after the highest id SQLite
 * ever gave.
 */
async function continueIdentity(client: pg.Client, table: CopiedTable, sqlite: Database): Promise<void> {
  if (!table.identityColumn) return;
  const hasSequences = sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'").get() !== undefined;
  const given = hasSequences ? (sqlite.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().safeIntegers(true).get(table.name) as bigint | undefined) : undefined;
  const highest = sqlite.prepare(`SELECT max(${quote(table.identityColumn)}) FROM ${quote(table.name)}`).pluck().safeIntegers(true).get() as bigint | null;
  const last = [given ?? 0n, highest ?? 0n].reduce((a, b) => (a > b ? a : b));
  if (last === 0n) return;
  await client.query('SELECT setval(pg_get_serial_sequence($1, $2), $3)', [quote(table.name), table.identityColumn, last.toString()]);
}

export interface CopyOptions {
  sqlitePath: string;
  postgresUrl: URL;
  /** Told each step as it happens, for a person watching a long copy. */
  onProgress?: (line: string) => void;
}

/**
 * Copies every table in one PostgreSQL transaction, from one SQLite read snapshot, and returns each
 * table's row counts. Throws CopyError (nothing written) when the target is not empty, the SQLite file
 * is not at the current schema, or any count differs.
 */
export async function copySqliteToPostgres({ sqlitePath, postgresUrl, onProgress = () => {} }: CopyOptions): Promise<TableCount[]> {
  const target = describePostgresUrl(postgresUrl);
  if (!fs.existsSync(sqlitePath)) throw new CopyError(`No SQLite database at ${sqlitePath}: pass --from, or set DATABASE_PATH.`);
  let sqlite: Database;
  try {
    sqlite = new Database(sqlitePath, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new CopyError(`Cannot open the SQLite database ${sqlitePath}: ${(error as Error).message}`);
  }
  const client = new pg.Client({ connectionString: postgresUrl.toString(), connectionTimeoutMillis: 10_000 });
  // A dropped connection is reported by the query it interrupts; without a listener it would crash the process.
  client.on('error', () => {});
  try {
    const tables = tablesInDependencyOrder();
    checkSqliteSchema(sqlite, sqlitePath, tables);
    try {
      await client.connect();
    } catch (error) {
      throw new CopyError(`Cannot connect to ${target}: ${describePostgresError(error)}`);
    }
    await refuseUnlessEmpty(client, target);
    onProgress(`Applying the PostgreSQL migrations to ${target}`);
    await migrate(drizzle(client), { migrationsFolder });

    sqlite.exec('BEGIN');
    await client.query('BEGIN');
    try {
      // Another copy running at the same time must wait, then find the rows and refuse.
      await client.query(`LOCK TABLE ${tables.map((table) => quote(table.name)).join(', ')} IN EXCLUSIVE MODE`);
      await refuseUnlessEmpty(client, target);
      const counts: TableCount[] = [];
      for (const table of tables) {
        const sqliteRows = Number(sqlite.prepare(`SELECT count(*) FROM ${quote(table.name)}`).pluck().get());
        try {
          await insertRows(client, table, sqlite);
        } catch (error) {
          throw new CopyError(`Copying table ${table.name} failed, nothing was written: ${describePostgresError(error)}`);
        }
        await continueIdentity(client, table, sqlite);
        const { rows } = await client.query<{ count: string }>(`SELECT count(*) AS count FROM ${quote(table.name)}`);
        const count = { table: table.name, sqliteRows, postgresRows: Number(rows[0].count) };
        counts.push(count);
        onProgress(`  ${table.name}: ${count.postgresRows} rows`);
      }
      const differing = counts.filter((count) => count.sqliteRows !== count.postgresRows);
      if (differing.length > 0) {
        const list = differing.map((count) => `${count.table} ${count.sqliteRows} in SQLite, ${count.postgresRows} in PostgreSQL`).join('; ');
        throw new CopyError(`Row counts differ (${list}): nothing was written.`, counts);
      }
      await client.query('COMMIT');
      return counts;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      sqlite.exec('ROLLBACK');
    }
  } finally {
    await client.end().catch(() => {});
    sqlite.close();
  }
}
