import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '@/db/sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callServerAction, setPassword, signIn } from '../helpers/dashboard';
import { RawMcp } from '../helpers/mcp';
import { createToken, startServer, testDatabase, type TestServer } from '../helpers/server';

const password = 'a long enough password';

async function client(server: TestServer, email: string): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, createToken(server, email));
  await mcp.initialize();
  return mcp;
}

async function health(server: TestServer, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}/healthz`, { headers });
  return { status: response.status, body: await response.json() };
}

/** A refusal as every storage condition must be answered: 503, Retry-After, and an error that says which. */
function expectRefusal(reply: { status: number; headers: Headers; body: any }, kind: string, words: RegExp): void {
  expect(reply.status).toBe(503);
  const retryAfter = Number(reply.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(reply.body.error).toMatchObject({ code: -32603, data: { retryAfterSeconds: retryAfter, storage: kind } });
  expect(reply.body.error.message).toMatch(words);
  expect(reply.body.error.message).toMatch(new RegExp(`Retry after ${retryAfter} seconds?$`));
}

const delayTask = (seconds: number) => ({ name: 'delay', arguments: { seconds }, task: {} });

// The SQLite faults in the SQLite passes, PostgreSQL's in its own: each pass runs all of its own.
if (testDatabase === 'sqlite') describe('another process holds SQLite’s write lock', () => {
  let server: TestServer;
  beforeAll(async () => {
    // Behind a proxy, so that a test can call from an address that is not this machine's.
    server = await startServer({ DATABASE_BUSY_TIMEOUT_MS: '2000', TRUST_PROXY: 'true' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('reads go on at once; a write waits for the lock without holding anything else, or is refused plainly after the deadline', async () => {
    const mcp = await client(server, 'lock@example.com');
    const before = (await mcp.call('tools/call', delayTask(0))).task;
    const holder = new Database(server.dbPath);
    try {
      holder.exec('BEGIN IMMEDIATE');
      const waiting = mcp.request('tools/call', delayTask(0));
      // While that write waits, reads answer (the event loop is free), and /healthz says why writes wait.
      for (let read = 0; read < 5; read++) {
        const started = performance.now();
        expect((await mcp.call('tasks/get', { taskId: before.taskId })).taskId).toBe(before.taskId);
        expect(performance.now() - started).toBeLessThan(1000);
      }
      expect(await health(server)).toMatchObject({ status: 503, body: { status: 'degraded', storage: { writable: false, trouble: 'busy' } } });
      await new Promise((resolve) => setTimeout(resolve, 800));
      holder.exec('COMMIT');
      const written = await waiting;
      expect(written.status).toBe(200);
      expect(written.body.result.task.status).toBe('working');

      // Held past DATABASE_BUSY_TIMEOUT_MS: the clear refusal, and nothing written.
      holder.exec('BEGIN IMMEDIATE');
      const refused = await mcp.request('tools/call', delayTask(0));
      expectRefusal(refused, 'busy', /database is busy \(another process holds its write lock\); the change was not made/);
      holder.exec('COMMIT');
      const rows = holder.prepare('SELECT id FROM tasks').pluck().all() as string[];
      expect(rows.sort()).toEqual([before.taskId, written.body.result.task.taskId].sort());
      await expect.poll(async () => (await health(server)).status).toBe(200);
      expect((await mcp.call('tools/call', delayTask(0))).task.status).toBe('working');
    } finally {
      if (holder.inTransaction) holder.exec('ROLLBACK');
      holder.close();
    }
  });

  it('/healthz tells the free space only to a caller on this machine; anyone else learns whether it is low', async () => {
    const here = await health(server);
    expect(here.status).toBe(200);
    expect(here.body.storage.freeMiB).toEqual(expect.any(Number));
    const elsewhere = await health(server, { 'X-Forwarded-For': '203.0.113.7' });
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body).toMatchObject({ status: 'ok', storage: { writable: true, database: 'sqlite', lowSpace: here.body.storage.lowSpace } });
    expect(elsewhere.body.storage).not.toHaveProperty('freeMiB');
  });

  it('a database file deleted with its folder is put back from the open connection, with every task', async () => {
    const mcp = await client(server, 'gone@example.com');
    const kept = (await mcp.call('tools/call', delayTask(0))).task;
    // Ended before the folder goes: an outcome written while the file is gone waits out the trouble with
    // pauses of up to 5 s, and this test is about what was stored, not about that wait.
    await expect.poll(async () => (await mcp.call('tasks/get', { taskId: kept.taskId })).status, { timeout: 10_000 }).toBe('completed');
    fs.rmSync(server.dataDir, { recursive: true, force: true });
    // A file where the folder was: the server cannot put the database back until it is removed.
    fs.writeFileSync(server.dataDir, '');
    await expect.poll(() => server.output(), { timeout: 15_000 }).toMatch(/could not be restored .*; writes are refused until it is/);
    // Until it is back, writes are refused saying so (not taken into the file the server still has
    // open, which would lose them when it stops), reads go on, and /healthz says why.
    expectRefusal(await mcp.request('tools/call', delayTask(0)), 'gone', /database file is gone \(moved, or its folder removed\); the change was not made/);
    expect((await mcp.call('tasks/get', { taskId: kept.taskId })).taskId).toBe(kept.taskId);
    expect(await health(server)).toMatchObject({ status: 503, body: { status: 'degraded', storage: { writable: false, trouble: 'gone' } } });
    fs.rmSync(server.dataDir);
    // Afterwards they work again.
    await expect.poll(() => fs.existsSync(server.dbPath), { timeout: 15_000 }).toBe(true);
    await expect.poll(async () => (await health(server)).status, { timeout: 10_000 }).toBe(200);
    const after = (await mcp.call('tools/call', delayTask(0))).task;
    expect((await mcp.call('tasks/get', { taskId: kept.taskId })).status).toBe('completed');
    const restored = new Database(server.dbPath, { readonly: true });
    try {
      const ids = restored.prepare('SELECT id FROM tasks').pluck().all() as string[];
      expect(ids).toEqual(expect.arrayContaining([kept.taskId, after.taskId]));
    } finally {
      restored.close();
    }
    await expect.poll(() => server.output()).toMatch(/database file .* is gone \(deleted or moved\); restoring it/);
  });
});

/** A tmpfs of `size` at a fresh folder. */
function mountTmpfs(size: string): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-task-server-small-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', folder]);
  return folder;
}

function unmount(folder: string): void {
  execFileSync('umount', ['-l', folder]);
  fs.rmSync(folder, { recursive: true, force: true });
}

/** Fills the disk of `folder` to the last block; returns the filler's path. */
function fill(folder: string): string {
  const filler = path.join(folder, 'filler');
  const fd = fs.openSync(filler, 'w');
  const block = Buffer.alloc(64 * 1024);
  try {
    for (let size = block.length; size >= 512; ) {
      try {
        fs.writeSync(fd, block, 0, size);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
        size = Math.floor(size / 2);
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

// A small tmpfs needs root, which the test machines and CI have.
if (testDatabase === 'sqlite') describe('a full disk', () => {
  let folder: string;
  let server: TestServer;
  beforeAll(async () => {
    folder = mountTmpfs('32m');
    server = await startServer({ DATABASE_PATH: path.join(folder, 'app.db'), STORAGE_MIN_FREE_MB: '1', MCP_FIXTURE_TOOLS: '1' });
  });
  afterAll(async () => {
    await server?.stop();
    if (folder) unmount(folder);
  });

  it('refuses new work plainly while reads and the dashboard go on; afterwards every task is in a true state and nothing was half-written', async () => {
    const email = 'full@example.com';
    const mcp = await client(server, email);
    expect(setPassword(server, email, password).status).toBe(0);
    const { sessionCookie } = await signIn(server, email, password);
    const asked = (await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Ship it?' }, task: {} })).task;
    await expect.poll(async () => (await mcp.call('tasks/get', { taskId: asked.taskId })).status).toBe('input_required');
    // 32 MiB is below STORAGE_WARN_FREE_MB's default: the dashboard and the log say so before anything fails.
    const early = await (await fetch(`${server.url}/tasks`, { headers: { Cookie: sessionCookie! } })).text();
    expect(early).toMatch(/Storage is running low: [\d.]+ MiB free on the database(’|'|&#x27;)s disk/);
    await expect.poll(() => server.output()).toMatch(/MiB free on the database's disk, below STORAGE_WARN_FREE_MB \(256\)/);

    // A tool that will ask, and one that will end, once the disk is full.
    const asksLater = (await mcp.call('tools/call', { name: 'fixture_ask_later', arguments: { waitMs: 1500 }, task: {} })).task;
    const ending = (await mcp.call('tools/call', delayTask(1))).task;
    // Every write from here needs room: the WAL is emptied, then the disk filled to its last block.
    const direct = new Database(server.dbPath);
    direct.pragma('wal_checkpoint(TRUNCATE)');
    direct.close();
    const filler = fill(folder);
    const filledAt = Date.now();

    const refusals = [];
    for (let attempt = 0; attempt < 5; attempt++) refusals.push(await mcp.request('tools/call', delayTask(0)));
    for (const refused of refusals) expectRefusal(refused, 'full', /storage is full, so nothing new can be saved; the change was not made, and reading still works/);
    expect((await mcp.call('tasks/get', { taskId: asked.taskId })).status).toBe('input_required');
    expect((await mcp.call('tasks/list', {})).tasks).toHaveLength(3);
    expect(await health(server)).toMatchObject({ status: 503, body: { status: 'degraded', message: expect.stringMatching(/^Storage is full/), storage: { writable: false, trouble: 'full' } } });
    const page = await fetch(`${server.url}/tasks`, { headers: { Cookie: sessionCookie! } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('data-testid="storage-banner"');
    expect(html).toContain('Storage is full: nothing new can be saved, and reading still works. New tasks, answers and changes wait until it is resolved.');
    // The request log is written in batches, within 200 ms.
    await expect.poll(() => server.output()).toMatch(/"status":503,"rpcError":-32603,"storage":"full"/);
    // The person who answers in the dashboard is told the same, in words for people.
    const reader = new Database(server.dbPath, { readonly: true });
    const [inputId] = reader.prepare('SELECT id FROM task_inputs WHERE task_id = ?').pluck().all(asked.taskId) as string[];
    reader.close();
    const form = new FormData();
    form.set('_1_$action', 'accept');
    form.set('_1_answer', 'yes');
    form.set('0', JSON.stringify([inputId, { ok: false }, '$K1']));
    const pressed = await callServerAction(server, { page: `/tasks/${asked.taskId}`, filename: 'app/(dashboard)/tasks/[taskId]/input-actions.ts', exportedName: 'answerQuestionAction', body: form, cookie: sessionCookie });
    expect(pressed.status).toBe(200);
    expect(pressed.text).toContain('Storage is full, so nothing new can be saved; the change was not made, and reading still works. Try again in 30 seconds.');
    // What they typed comes back with it, so the form keeps it.
    expect(pressed.text).toContain('"values":{"answer":"yes"}');

    // Meanwhile the delay ended and the other tool asked its question: neither could be stored, and
    // neither task claims more than is true.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, filledAt + 2500 - Date.now())));
    expect((await mcp.call('tasks/get', { taskId: ending.taskId })).status).toBe('working');
    expect((await mcp.call('tasks/get', { taskId: asksLater.taskId })).status).toBe('working');

    fs.rmSync(filler);
    await expect.poll(async () => (await mcp.call('tasks/get', { taskId: ending.taskId })).status, { timeout: 15_000 }).toBe('completed');
    await expect.poll(async () => (await mcp.call('tasks/get', { taskId: asksLater.taskId })).status, { timeout: 15_000 }).toBe('input_required');
    await expect.poll(async () => (await health(server)).status, { timeout: 15_000 }).toBe(200);
    const created = (await mcp.call('tools/call', delayTask(0))).task;

    const db = new Database(server.dbPath, { readonly: true });
    try {
      const statuses = Object.fromEntries(db.prepare('SELECT id, status FROM tasks').all().map((row: any) => [row.id, row.status]));
      expect(statuses).toEqual({ [asked.taskId]: 'input_required', [asksLater.taskId]: 'input_required', [ending.taskId]: 'completed', [created.taskId]: expect.any(String) });
      const questions = db.prepare('SELECT task_id FROM task_inputs WHERE status = ?').pluck().all('pending') as string[];
      expect(questions.sort()).toEqual([asked.taskId, asksLater.taskId].sort());
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }
  });

  it('a question storage cannot take within STORAGE_RETRY_WINDOW_MS ends its task failed, saying why, once storage can take that', async () => {
    const small = mountTmpfs('32m');
    const other = await startServer({ DATABASE_PATH: path.join(small, 'app.db'), STORAGE_MIN_FREE_MB: '1', STORAGE_RETRY_WINDOW_MS: '1000', MCP_FIXTURE_TOOLS: '1' });
    try {
      const mcp = await client(other, 'window@example.com');
      const task = (await mcp.call('tools/call', { name: 'fixture_ask_later', arguments: { waitMs: 1500 }, task: {} })).task;
      const direct = new Database(other.dbPath);
      direct.pragma('wal_checkpoint(TRUNCATE)');
      direct.close();
      const filler = fill(small);
      // The question comes 1.5 s after the start, and is given up on a second later.
      await new Promise((resolve) => setTimeout(resolve, 4000));
      expect((await mcp.call('tasks/get', { taskId: task.taskId })).status).toBe('working');
      fs.rmSync(filler);
      await expect.poll(async () => (await mcp.call('tasks/get', { taskId: task.taskId })).status, { timeout: 15_000 }).toBe('failed');
      const failed = await mcp.call('tasks/get', { taskId: task.taskId });
      expect(failed.statusMessage).toMatch(/its question could not be stored: storage stayed full/);
      const db = new Database(other.dbPath, { readonly: true });
      expect(db.prepare('SELECT count(*) FROM task_inputs WHERE task_id = ?').pluck().get(task.taskId)).toBe(0);
      db.close();
    } finally {
      await other.stop();
      unmount(small);
    }
  });

  it('a server does not start on a disk with less free space than STORAGE_MIN_FREE_MB, and says why in one line', async () => {
    await expect(startServer({ DATABASE_PATH: path.join(folder, 'other.db'), STORAGE_MIN_FREE_MB: '4096' })).rejects.toThrow(
      /Not starting: [\d.]+ MiB free on the disk of .+, less than STORAGE_MIN_FREE_MB \(4096\); free some space or lower the setting\./,
    );
  });

  it('a server does not start on a read-only folder, and says why in one line', async () => {
    const readOnly = mountTmpfs('1m');
    try {
      execFileSync('mount', ['-o', 'remount,ro', readOnly]);
      await expect(startServer({ DATABASE_PATH: path.join(readOnly, 'app.db') })).rejects.toThrow(/Not starting: the database folder .+ is not writable \(EROFS\)/);
    } finally {
      unmount(readOnly);
    }
  });
});

if (testDatabase === 'postgres') describe('PostgreSQL refusing writes', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a read-only database (default_transaction_read_only) refuses writes plainly, reads go on, and writes come back after', async () => {
    const mcp = await client(server, 'readonly@example.com');
    const kept = (await mcp.call('tools/call', delayTask(0))).task;
    const database = new URL(server.env.DATABASE_URL).pathname.slice(1);
    const admin = server.db();
    const endOtherConnections = () => admin.prepare('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ? AND pid <> pg_backend_pid()').all(database);
    admin.prepare(`ALTER DATABASE "${database}" SET default_transaction_read_only = on`).run();
    // The setting reaches new connections: end the server's pooled ones.
    endOtherConnections();
    try {
      await expect.poll(async () => (await mcp.request('tools/call', delayTask(0))).status, { timeout: 15_000 }).toBe(503);
      expectRefusal(await mcp.request('tools/call', delayTask(0)), 'readonly', /database is read-only right now; the change was not made, and reading still works/);
      expect((await mcp.call('tasks/get', { taskId: kept.taskId })).status).toBe('completed');
      expect(await health(server)).toMatchObject({ status: 503, body: { storage: { writable: false, trouble: 'readonly' } } });
    } finally {
      admin.prepare(`ALTER DATABASE "${database}" SET default_transaction_read_only = off`).run();
      endOtherConnections();
    }
    await expect.poll(async () => (await mcp.request('tools/call', delayTask(0))).status, { timeout: 15_000 }).toBe(200);
    // /healthz looks again at most once a second.
    await expect.poll(async () => (await health(server)).status).toBe(200);
  });

  // The tablespace is a small tmpfs on this machine, where the PostgreSQL of the tests runs.
  it('a full tablespace refuses new tasks plainly, reads go on, and nothing is half-written', async () => {
    const mcp = await client(server, 'tablespace@example.com');
    const kept = (await mcp.call('tools/call', delayTask(0))).task;
    const folder = mountTmpfs('4m');
    const tablespace = `small_${process.pid}`;
    const admin = server.db();
    try {
      execFileSync('chown', ['postgres', folder]);
      admin.prepare(`CREATE TABLESPACE ${tablespace} LOCATION '${folder}'`).run();
      admin.prepare(`ALTER TABLE tasks SET TABLESPACE ${tablespace}`).run();
      const filler = fill(folder);
      // New rows fit in the table's last page until it must grow: create until storage says no.
      const created = [kept.taskId];
      let refused: Awaited<ReturnType<RawMcp['request']>> | undefined;
      for (let attempt = 0; attempt < 200 && !refused; attempt++) {
        const reply = await mcp.request('tools/call', delayTask(0));
        if (reply.status === 200) created.push(reply.body.result.task.taskId);
        else refused = reply;
      }
      expect(refused).toBeDefined();
      expectRefusal(refused!, 'full', /storage is full, so nothing new can be saved; the change was not made, and reading still works/);
      expect((await mcp.call('tasks/get', { taskId: kept.taskId })).status).toBe('completed');
      fs.rmSync(filler);
      await expect.poll(async () => (await mcp.request('tools/call', delayTask(0))).status, { timeout: 15_000 }).toBe(200);
      const ids = admin.prepare('SELECT tasks.id FROM tasks JOIN users ON users.id = tasks.user_id WHERE users.email = ?').pluck().all('tablespace@example.com') as string[];
      // Every task the client was told of, and one more (the last): none of the refused ones.
      expect(ids).toHaveLength(created.length + 1);
      expect(ids).toEqual(expect.arrayContaining(created));
    } finally {
      admin.prepare('ALTER TABLE tasks SET TABLESPACE pg_default').run();
      admin.prepare(`DROP TABLESPACE IF EXISTS ${tablespace}`).run();
      unmount(folder);
    }
  });
});
