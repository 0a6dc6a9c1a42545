import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '@/db/sqlite';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSdkClient, RawMcp, sleep } from '../helpers/mcp';
import { BrowserSession, pkcePair, publicClientMetadata, registerClient, tokenRequest } from '../helpers/oauth';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { createToken, runScript, startServer, type TestServer } from '../helpers/server';

const root = path.resolve(__dirname, '..', '..');
const tsxCli = path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const password = 'correct horse battery staple';
const redirectUri = 'http://127.0.0.1:53682/callback';
const tables = [
  'users',
  'email_confirmations',
  'upstream_credentials',
  'linked_accounts',
  'access_tokens',
  'mcp_sessions',
  'session_messages',
  'tasks',
  'task_events',
  'task_inputs',
  'oauth_records',
  'oauth_consents',
  'notification_events',
  'notification_targets',
  'notification_attempts',
  'notification_preferences',
];

let folder: string;
let sqlitePath: string;
let database: TestDatabase;
let target: string;
/** Values that must never be printed: the token, hashes, payloads, answers, the URL's password. */
const secrets: string[] = [];

function runCopy(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [tsxCli, 'scripts/db-copy.ts', ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_PATH: sqlitePath, ...env },
    encoding: 'utf8',
  });
  const output = result.stdout + result.stderr;
  for (const secret of secrets) expect(output.includes(secret), `the output shows a secret:\n${output}`).toBe(false);
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The URL with a password in it, even where the server trusts loopback without one. */
function withPassword(url: string): string {
  const parsed = new URL(url);
  parsed.password ||= `pw-${randomBytes(8).toString('hex')}`;
  return parsed.toString();
}

/** A row as comparable values: text exactly, numbers as their decimal text, null as null. */
const comparable = (row: unknown[]) => row.map((value) => (value === null ? null : typeof value === 'string' ? { text: value } : { number: String(value) }));
const sorted = (rows: unknown[][]) => rows.map(comparable).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

function columnsOf(sqlite: Database, table: string): string[] {
  return sqlite.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[];
}

function sqliteRows(table: string): unknown[][] {
  const sqlite = new Database(sqlitePath, { readonly: true });
  try {
    const columns = columnsOf(sqlite, table).map((name) => `"${name}"`);
    return sqlite.prepare(`SELECT ${columns.join(', ')} FROM "${table}"`).raw(true).safeIntegers(true).all() as unknown[][];
  } finally {
    sqlite.close();
  }
}

/** The rows of a query as arrays, 64-bit integers as BigInt so that none is rounded. */
async function postgresQuery(url: string, text: string): Promise<unknown[][]> {
  const client = new pg.Client({
    connectionString: url,
    types: { getTypeParser: (oid, format) => (oid === pg.types.builtins.INT8 ? (value: string) => BigInt(value) : pg.types.getTypeParser(oid, format)) },
  });
  await client.connect();
  try {
    return (await client.query({ text, rowMode: 'array' })).rows;
  } finally {
    await client.end();
  }
}

const postgresRows = (url: string, table: string, columns: string[]) => postgresQuery(url, `SELECT ${columns.map((name) => `"${name}"`).join(', ')} FROM "${table}"`);

async function expectSameRows(url: string): Promise<void> {
  const sqlite = new Database(sqlitePath, { readonly: true });
  const columns = Object.fromEntries(tables.map((table) => [table, columnsOf(sqlite, table)]));
  sqlite.close();
  for (const table of tables) {
    const expected = sorted(sqliteRows(table));
    expect(expected.length, `${table} holds no rows to compare`).toBeGreaterThan(0);
    expect({ table, rows: sorted(await postgresRows(url, table, columns[table])) }).toEqual({ table, rows: expected });
  }
}

/** Real data from the real server: a person with a password and a token, tasks, a question, an OAuth app. */
async function makeData(server: TestServer): Promise<void> {
  const token = createToken(server, 'ada@example.com');
  secrets.push(token);
  const setPassword = spawnSync(process.execPath, [tsxCli, 'scripts/user-password.ts', '--email', 'ada@example.com'], {
    cwd: root,
    env: { ...process.env, ...server.env, PASSWORD: password },
    encoding: 'utf8',
  });
  if (setPassword.status !== 0) throw new Error(setPassword.stderr);
  // A webhook nothing listens on: its events wait in the outbox and its failed attempts are logged.
  const webhook = runScript(server, 'webhook', ['add', '--email', 'ada@example.com', '--url', 'http://127.0.0.1:9/hooks']);
  if (webhook.status !== 0) throw new Error(webhook.stderr);
  secrets.push(/^secret: (.+)$/m.exec(webhook.stdout)![1]);

  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize('2025-11-25', { elicitation: { form: {} } });
  const stream = await mcp.openGetStream();
  const finished = await mcp.startDelayTask(0.6, { _meta: { progressToken: 'progress-é' } });
  const cancelled = await mcp.startDelayTask(60);
  await mcp.startDelayTask(60);
  await mcp.call('tasks/cancel', { taskId: cancelled.taskId });
  await mcp.call('tools/call', { name: 'delay', arguments: { seconds: 0.2 } });
  await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Still there?' }, task: {} });
  await mcp.call('tasks/result', { taskId: finished.taskId });
  await stream.close();

  const sdk = await connectSdkClient(server.mcpUrl, token, { capabilities: { elicitation: { form: {} } } });
  sdk.client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { answer: 'bleu “ciel” 🎨' } }));
  try {
    const messages = [];
    for await (const message of sdk.client.experimental.tasks.callToolStream(
      { name: 'ask_human', arguments: { question: 'Couleur préférée ? \u2028 "quoted"', choices: ['rouge', 'bleu “ciel” 🎨'] } },
      CallToolResultSchema,
      { task: {} },
    )) {
      messages.push(message);
    }
    expect(messages.at(-1)?.type).toBe('result');
  } finally {
    await sdk.close();
  }

  const registered = await registerClient(server.url, publicClientMetadata('Copy test app', redirectUri));
  const { client_id: clientId } = (await registered.json()) as { client_id: string };
  const browser = new BrowserSession(server.url);
  await browser.signIn('ada@example.com', password);
  const pkce = pkcePair();
  const authorization = new URL('/oauth/authorize', server.url);
  const resource = `${server.url}/mcp`;
  for (const [name, value] of Object.entries({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri, scope: 'mcp', state: 's', code_challenge: pkce.challenge, code_challenge_method: 'S256', resource })) {
    authorization.searchParams.set(name, value);
  }
  const landed = await browser.authorize(authorization.toString());
  const code = landed.searchParams.get('code')!;
  const tokens = await tokenRequest(server.url, { grant_type: 'authorization_code', client_id: clientId, code, code_verifier: pkce.verifier, redirect_uri: redirectUri, resource });
  expect(tokens.status).toBe(200);
  secrets.push(code, tokens.body.access_token, tokens.body.refresh_token);
  // Let the last progress and status writes land before the server stops.
  await sleep(300);
  for (let waited = 0; (server.db().prepare('SELECT count(*) AS n FROM notification_attempts').get() as { n: number }).n === 0; waited += 100) {
    if (waited > 10_000) throw new Error('No delivery was attempted to the webhook');
    await sleep(100);
  }
}

beforeAll(async () => {
  folder = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-db-copy-'));
  sqlitePath = path.join(folder, 'app.db');
  database = await createTestDatabase();
  target = withPassword(database.url);
  secrets.push(new URL(target).password);
  // npm start's server: it alone serves the authorization server, and the copy is not about /mcp (the file runs in one pass).
  const server = await startServer({ DATABASE_PATH: sqlitePath, NOTIFY_PRIVATE_HOSTS: '127.0.0.1', NOTIFY_RETRY_BASE_MS: '100' }, 'production-server');
  try {
    await makeData(server);
  } finally {
    await server.stop();
  }
  // Only GitHub or Google sign-in links an account; the row they would write stands in for them.
  const writable = new Database(sqlitePath);
  const userId = writable.prepare('SELECT id FROM users').pluck().get() as string;
  writable.prepare('INSERT INTO linked_accounts (provider, provider_account_id, user_id, created_at) VALUES (?, ?, ?, ?)').run('github', '12345', userId, Date.now());
  writable.prepare('INSERT INTO notification_preferences (user_id, quiet_while_live, max_per_minute) VALUES (?, 1, 12)').run(userId);
  // A confirmation link sent and opened, as the Notifications page's button and the link would leave it.
  writable.prepare('INSERT INTO email_confirmations (id, user_id, email, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?)').run('confirmation-1', userId, 'ada@example.com', Date.now() - 60_000, Date.now() + 3_540_000, Date.now());
  // A person's sealed secret for an upstream server, as the Servers page's form would leave it.
  writable.prepare('INSERT INTO upstream_credentials (user_id, server_name, sealed, created_at) VALUES (?, ?, ?, ?)').run(userId, 'remote', 'v1.aXYtaXYtaXYtaXY.dGFnLXRhZy10YWctdGFn.c2VhbGVkLXNlY3JldA', Date.now());
  writable.close();
  const reader = new Database(sqlitePath, { readonly: true });
  for (const column of ['password_hash FROM users', 'token_hash FROM access_tokens', 'id_hash FROM oauth_records', 'payload FROM oauth_records', 'response FROM task_inputs', 'sealed FROM upstream_credentials']) {
    for (const value of reader.prepare(`SELECT ${column} WHERE ${column.split(' ')[0]} IS NOT NULL`).pluck().all() as string[]) secrets.push(value);
  }
  reader.close();
});

afterAll(async () => {
  await database?.drop();
  if (folder) fs.rmSync(folder, { recursive: true, force: true });
});

describe('npm run db:copy', () => {
  it('copies every table row for row, JSON text byte for byte, and prints each row count', async () => {
    const statuses = new Set(sqliteRows('tasks').map((row) => row[7]));
    expect([...statuses].sort()).toEqual(['cancelled', 'completed', 'input_required', 'working']);
    expect(sqliteRows('task_inputs').map((row) => row[6]).sort()).toEqual(['answered', 'pending']);
    const fileBefore = fs.readFileSync(sqlitePath);

    const copy = runCopy(['--to', target]);
    expect(copy.stderr).toBe('');
    expect(copy.status).toBe(0);
    for (const table of tables) {
      expect(copy.stdout).toContain(`  ${table}: ${sqliteRows(table).length} rows\n`);
    }
    expect(copy.stdout).toMatch(/^Copied 16 tables, \d+ rows; every table has as many rows in PostgreSQL as in SQLite\.$/m);
    await expectSameRows(database.url);
    expect(fs.readFileSync(sqlitePath).equals(fileBefore)).toBe(true);

    // A message written on PostgreSQL later gets an id SQLite never gave: clients resume streams by it.
    const sqlite = new Database(sqlitePath, { readonly: true });
    const lastGiven = sqlite.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'session_messages'").pluck().safeIntegers(true).get() as bigint;
    sqlite.close();
    const [[next]] = await postgresQuery(database.url, "SELECT nextval(pg_get_serial_sequence('session_messages', 'id'))");
    expect(next).toBe(lastGiven + 1n);
  });

  it('refuses a target that holds rows, in one line, and changes nothing', async () => {
    const copy = runCopy(['--from', sqlitePath, '--to', target]);
    expect(copy.status).toBe(1);
    const shown = new URL(target);
    shown.password = '';
    // task_counts is kept by triggers as the tasks were copied in.
    const filled = [...tables, 'task_counts'].sort().join(', ');
    expect(copy.stderr).toBe(`Refusing to copy: ${shown} is not empty (rows in ${filled}); db:copy fills an empty database only.\n`);
    await expectSameRows(database.url);
  });

  it('rolls back and fails when a row count differs after the copy', async () => {
    const sibling = await database.createSibling();
    try {
      const url = withPassword(sibling.url);
      // A trigger that quietly drops every other task event stands in for any loss on the way.
      const migrated = runCopy(['--to', url], { DATABASE_PATH: emptyCopyOf(sqlitePath) });
      expect(migrated.status).toBe(0);
      const client = new pg.Client({ connectionString: sibling.url });
      await client.connect();
      await client.query(`CREATE FUNCTION skip_even_events() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id % 2 = 0 THEN RETURN NULL; END IF; RETURN NEW; END $$`);
      await client.query('CREATE TRIGGER skip_even_events BEFORE INSERT ON task_events FOR EACH ROW EXECUTE FUNCTION skip_even_events()');
      await client.end();

      const copy = runCopy(['--to', url]);
      expect(copy.status).toBe(1);
      expect(copy.stderr).toMatch(/^Row counts differ \(task_events \d+ in SQLite, \d+ in PostgreSQL\): nothing was written\.\n$/);
      for (const table of tables) expect({ table, rows: await postgresQuery(sibling.url, `SELECT count(*)::int FROM "${table}"`) }).toEqual({ table, rows: [[0]] });
    } finally {
      await sibling.drop();
    }
  });

  it('names the database it cannot reach, without the password', async () => {
    const missing = new URL(target);
    missing.pathname = `/mcp_test_missing_${randomBytes(4).toString('hex')}`;
    const copy = runCopy(['--to', missing.toString()]);
    expect(copy.status).toBe(1);
    missing.password = '';
    expect(copy.stderr).toBe(`Cannot connect to ${missing.toString()}: database "${missing.pathname.slice(1)}" does not exist (SQLSTATE 3D000)\n`);
  });

  it('refuses bad arguments before touching anything', () => {
    const withoutTarget = runCopy([]);
    expect(withoutTarget.status).toBe(2);
    expect(withoutTarget.stderr).toMatch(/^--to is required: the PostgreSQL database to copy into\.\nUsage: npm run db:copy -- --to postgres:/);

    secrets.push('hunter2');
    const mysql = runCopy(['--to', 'mysql://root:hunter2@127.0.0.1:3306/app']);
    expect(mysql.status).toBe(2);
    expect(mysql.stderr).toMatch(/^--to must be a postgres:\/\/ URL, not mysql:\/\/\.\n/);

    const notAUrl = runCopy(['--to', '127.0.0.1:5432/app']);
    expect(notAUrl.status).toBe(2);

    const noFile = runCopy(['--to', target, '--from', path.join(folder, 'missing.db')]);
    expect(noFile.status).toBe(1);
    expect(noFile.stderr).toBe(`No SQLite database at ${path.join(folder, 'missing.db')}: pass --from, or set DATABASE_PATH.\n`);
  });
});

/** A migrated SQLite file with no rows, for preparing a target whose tables exist but are empty. */
function emptyCopyOf(source: string): string {
  const file = path.join(folder, 'empty.db');
  if (fs.existsSync(file)) return file;
  const sqlite = new Database(source, { readonly: true });
  sqlite.prepare('VACUUM INTO ?').run(file);
  sqlite.close();
  const empty = new Database(file);
  for (const table of [...tables].reverse()) empty.prepare(`DELETE FROM "${table}"`).run();
  empty.close();
  return file;
}
