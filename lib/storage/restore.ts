import fs from 'node:fs';
import path from 'node:path';
import { closeStore, getStore } from '@/db/client';
import { getEnv } from '@/lib/env';

let restoring: Promise<boolean> | undefined;

/**
 * The SQLite file (or its whole folder) was deleted or moved while the server had it open: the open
 * connection still holds every row, so it is copied back to where the file belongs (SQLite's online
 * backup), and the server goes on with the copy. Resolves with whether it had to.
 */
export function restoreRemovedDatabase(): Promise<boolean> {
  restoring ??= restore().finally(() => {
    restoring = undefined;
  });
  return restoring;
}

async function restore(): Promise<boolean> {
  const store = getStore();
  if (store.dialect !== 'sqlite' || store.key === ':memory:') return false;
  const file = path.resolve(getEnv().DATABASE_PATH);
  if (fs.existsSync(file)) {
    // Put back by hand while writes were refused: the server goes on with the file where it belongs.
    if (store.fileGone) {
      await closeStore();
      getStore();
      console.error(`Storage: the database file ${file} is back; writes go on.`);
    }
    return false;
  }
  console.error(`Storage: the database file ${file} is gone (deleted or moved); restoring it from the open connection.`);
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const copy = `${file}.restoring-${process.pid}`;
    await store.sqlite.backup(copy);
    fs.chmodSync(copy, 0o600);
    // Nothing runs between the copy's last page and the switch: writes made meanwhile are in the copy.
    fs.renameSync(copy, file);
    await closeStore();
    getStore();
    console.error(`Storage: the database file ${file} was restored; writes go on.`);
    return true;
  } catch (error) {
    // Writes would go on into the file the connection still has open, and be lost when the process ends.
    if (!store.fileGone) store.sqlite.pragma('query_only = ON');
    store.fileGone = true;
    console.error(`Storage: the database file ${file} could not be restored (${(error as Error).message}); writes are refused until it is.`);
    return false;
  }
}
