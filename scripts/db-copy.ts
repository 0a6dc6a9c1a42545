/**
 * Copies the SQLite database into an empty PostgreSQL database:
 *   npm run db:copy -- --to postgres://user@host:5432/database [--from ./data/app.db]
 * The SQLite file is only read. Prints each table's row count, never a value, nor the URL's password.
 * Exit codes: 0 copied, 1 refused or failed (nothing written), 2 bad arguments.
 */
import { parseArgs } from 'node:util';
import { CopyError, copySqliteToPostgres, describePostgresError, describePostgresUrl } from '@/db/postgres-copy';

const usage = 'Usage: npm run db:copy -- --to postgres://user@host:5432/database [--from ./data/app.db]';

function exit(code: 1 | 2, message: string): never {
  console.error(message);
  process.exit(code);
}

/** The target URL, checked without ever echoing it: it may carry a password. */
function parseTarget(value: string | undefined): URL {
  if (!value) exit(2, `--to is required: the PostgreSQL database to copy into.\n${usage}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    exit(2, `--to must be a postgres:// URL, and this is not a URL.\n${usage}`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') exit(2, `--to must be a postgres:// URL, not ${url.protocol}//.\n${usage}`);
  if (url.pathname.length <= 1) exit(2, `--to must name the database, as in postgres://user@host:5432/database.\n${usage}`);
  return url;
}

async function main(): Promise<void> {
  let values: { to?: string; from?: string };
  try {
    ({ values } = parseArgs({ options: { to: { type: 'string' }, from: { type: 'string' } } }));
  } catch (error) {
    exit(2, `${(error as Error).message}\n${usage}`);
  }
  const postgresUrl = parseTarget(values.to);
  const sqlitePath = values.from ?? process.env.DATABASE_PATH ?? './data/app.db';
  console.log(`Copying ${sqlitePath} into ${describePostgresUrl(postgresUrl)}`);
  try {
    const counts = await copySqliteToPostgres({ sqlitePath, postgresUrl, onProgress: (line) => console.log(line) });
    const rows = counts.reduce((sum, count) => sum + count.postgresRows, 0);
    console.log(`Copied ${counts.length} tables, ${rows} rows; every table has as many rows in PostgreSQL as in SQLite.`);
  } catch (error) {
    if (error instanceof CopyError) exit(1, error.message);
    throw error;
  }
}

void main().catch((error: unknown) => exit(1, `The copy failed, nothing was written: ${describePostgresError(error)}`));
