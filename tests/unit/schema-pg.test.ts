import { getTableColumns, getTableName, is, SQL } from 'drizzle-orm';
import { getTableConfig as getPgTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { getTableConfig as getSqliteTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core';
import { describe, expect, it } from 'vitest';
import * as sqliteSchema from '@/db/schema';
import * as pgSchema from '@/db/schema.pg';

const sqliteTables = (Object.values(sqliteSchema) as unknown[]).filter((value): value is SQLiteTable => is(value, SQLiteTable));
const pgTables = (Object.values(pgSchema) as unknown[]).filter((value): value is PgTable => is(value, PgTable));

/** The PostgreSQL types that hold every value of a SQLite storage class exactly. */
const exactTypes: Record<string, string[]> = {
  text: ['text'],
  integer: ['integer', 'bigint'],
  real: ['double precision'],
};

type Shape = ReturnType<typeof shapeOf>;

function defaultOf(value: unknown): unknown {
  if (!is(value, SQL)) return value;
  return value.queryChunks.map((chunk) => (typeof chunk === 'object' && chunk && 'value' in chunk ? (chunk.value as string[]).join('') : String(chunk))).join('');
}

function shapeOf(config: ReturnType<typeof getPgTableConfig> | ReturnType<typeof getSqliteTableConfig>) {
  const columnName = (column: { name: string }) => column.name;
  return {
    columns: config.columns
      .map((column) => ({ name: column.name, notNull: column.notNull, primary: column.primary, default: defaultOf(column.default) }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    indexes: config.indexes
      .map(({ config: index }) => ({ name: index.name, unique: index.unique, on: index.columns.map((column) => columnName(column as { name: string })) }))
      .sort((a, b) => String(a.name).localeCompare(String(b.name))),
    foreignKeys: config.foreignKeys
      .map((key) => {
        const reference = key.reference();
        return { columns: reference.columns.map(columnName), table: getTableName(reference.foreignTable), foreignColumns: reference.foreignColumns.map(columnName), onDelete: key.onDelete };
      })
      .sort((a, b) => a.columns.join().localeCompare(b.columns.join())),
    compositeKeys: config.primaryKeys.map((key) => key.columns.map(columnName)),
  };
}

const byName = <T extends SQLiteTable | PgTable>(tables: T[]) => new Map(tables.map((table) => [getTableName(table), table]));

describe('the PostgreSQL schema', () => {
  it('has the tables, columns, keys, indexes and defaults of the SQLite schema', () => {
    const sqlite = byName(sqliteTables);
    const pg = byName(pgTables);
    expect([...pg.keys()].sort()).toEqual([...sqlite.keys()].sort());
    for (const [name, table] of sqlite) {
      const expected: Shape = shapeOf(getSqliteTableConfig(table));
      expect({ table: name, ...shapeOf(getPgTableConfig(pg.get(name)!)) }).toEqual({ table: name, ...expected });
    }
  });

  it('gives every column a type that holds its SQLite values exactly', () => {
    const pg = byName(pgTables);
    for (const table of sqliteTables) {
      const pgColumns = getTableColumns(pg.get(getTableName(table))!);
      for (const [key, column] of Object.entries(getTableColumns(table))) {
        const sqliteType = column.getSQLType();
        const pgType = pgColumns[key]?.getSQLType();
        expect({ column: `${getTableName(table)}.${column.name}`, fits: exactTypes[sqliteType]?.includes(pgType ?? '') }).toEqual({
          column: `${getTableName(table)}.${column.name}`,
          fits: true,
        });
        // Times and other 64-bit integers: a 32-bit column would refuse what SQLite holds.
        if (/_at$|^at$|_ms$/.test(column.name)) expect(`${column.name}: ${pgType}`).toBe(`${column.name}: bigint`);
      }
    }
  });
});
