import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '@/db/sqlite';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * SQLite's group commit (db/run.ts): write transactions asked for in the same turn of the event loop
 * commit together, each in a savepoint of its own, and each is acknowledged only after the commit.
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-group-commit-'));
process.env.DATABASE_PATH = path.join(dataDir, 'app.db');
delete process.env.DATABASE_URL;
delete process.env.SQLITE_GROUP_COMMIT;
const { getStore, closeStore } = await import('@/db/client');
const { inTransaction } = await import('@/db/run');
const { createUser } = await import('@/db/queries/users');
const store = getStore();
if (store.dialect !== 'sqlite') throw new Error('expected SQLite');
// Only the writes measured here go to the WAL, and nothing checkpoints it meanwhile.
store.sqlite.pragma('wal_autocheckpoint = 0');
const other = new Database(process.env.DATABASE_PATH);

afterAll(async () => {
  other.close();
  await closeStore();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** How many pages the writes in `work` appended to the WAL, which starts empty. */
async function walFramesWrittenBy(work: () => Promise<unknown>): Promise<number> {
  if (store.dialect === 'sqlite') store.sqlite.pragma('wal_checkpoint(TRUNCATE)');
  await work();
  const pageSize = other.pragma('page_size', { simple: true }) as number;
  const size = fs.statSync(`${process.env.DATABASE_PATH}-wal`).size;
  return size === 0 ? 0 : (size - 32) / (pageSize + 24);
}

/** A write transaction (grouped); createUser alone is a single statement, which commits on its own. */
const addUser = (email: string) => inTransaction((q) => createUser.program(q, { email }));
const userExists = (email: string) => other.prepare('SELECT 1 FROM users WHERE email = ?').get(email) !== undefined;

describe('group commit on SQLite', () => {
  it('commits writes asked for together once, where one after another each commits', async () => {
    const oneByOne = await walFramesWrittenBy(async () => {
      for (let index = 0; index < 20; index += 1) await addUser(`alone-${index}@example.com`);
    });
    const together = await walFramesWrittenBy(() => Promise.all(Array.from({ length: 20 }, (_, index) => addUser(`together-${index}@example.com`))));
    // Each lone commit writes the table's page and the email index's page again; together, once.
    expect(oneByOne).toBeGreaterThanOrEqual(40);
    expect(together).toBeLessThanOrEqual(oneByOne / 5);
    for (let index = 0; index < 20; index += 1) expect(userExists(`together-${index}@example.com`)).toBe(true);
  });

  it('acknowledges each write only once it is committed, and rolls back one that throws alone', async () => {
    const seenOnAcknowledgement: boolean[] = [];
    const writes = ['first', 'thrower', 'last'].map((name) =>
      inTransaction(function* (q) {
        const user = yield* createUser.program(q, { email: `${name}@example.com` });
        if (name === 'thrower') throw new Error('changed its mind');
        return user.email;
      }).then((email) => {
        seenOnAcknowledgement.push(userExists(email));
        return email;
      }),
    );
    const settled = await Promise.allSettled(writes);
    expect(settled.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason.message).toBe('changed its mind');
    expect(seenOnAcknowledgement).toEqual([true, true]);
    expect(userExists('first@example.com')).toBe(true);
    expect(userExists('thrower@example.com')).toBe(false);
    expect(userExists('last@example.com')).toBe(true);
  });

  it('waits, without blocking, while another process holds the write lock, then commits every write', async () => {
    other.exec('BEGIN IMMEDIATE');
    let released = false;
    const writes = Promise.all(Array.from({ length: 5 }, (_, index) => addUser(`waited-${index}@example.com`).then(() => released)));
    // Reads go on meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(userExists('first@example.com')).toBe(true);
    released = true;
    other.exec('ROLLBACK');
    expect(await writes).toEqual([true, true, true, true, true]);
    for (let index = 0; index < 5; index += 1) expect(userExists(`waited-${index}@example.com`)).toBe(true);
  });
});
