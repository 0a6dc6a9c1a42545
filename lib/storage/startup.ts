import fs from 'node:fs';
import path from 'node:path';
import { getEnv } from '@/lib/env';
import { freeBytes, MiB } from './health';

/**
 * Why the SQLite database's folder cannot hold the database, in one line, or undefined when it can: the
 * folder must be (or become) a writable folder, with at least `minFreeMiB` free on its disk. Checked
 * before anything is opened, so that a server that could not keep people's work does not start.
 */
function storageStartProblem(databasePath: string, minFreeMiB: number): string | undefined {
  const folder = path.dirname(path.resolve(databasePath));
  try {
    fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  } catch (error) {
    return `Not starting: the database folder ${folder} cannot be created (${(error as NodeJS.ErrnoException).code ?? String(error)}).`;
  }
  // Writing a file tells what permission bits cannot (a read-only mount, root on a read-only file system).
  const probe = path.join(folder, `.write-check-${process.pid}`);
  try {
    fs.writeFileSync(probe, '');
    fs.unlinkSync(probe);
  } catch (error) {
    return `Not starting: the database folder ${folder} is not writable (${(error as NodeJS.ErrnoException).code ?? String(error)}); the server keeps its database there.`;
  }
  const file = path.resolve(databasePath);
  if (fs.existsSync(file)) {
    try {
      fs.accessSync(file, fs.constants.W_OK);
    } catch {
      return `Not starting: the database file ${file} is read-only; make it writable by this user.`;
    }
  }
  const free = freeBytes(folder);
  if (free !== undefined && free < minFreeMiB * MiB) {
    return `Not starting: ${(free / MiB).toFixed(1)} MiB free on the disk of ${folder}, less than STORAGE_MIN_FREE_MB (${minFreeMiB}); free some space or lower the setting.`;
  }
  return undefined;
}

const globalForStartup = globalThis as unknown as { __mcpTaskServerStorageChecked?: boolean };

/**
 * Stops the process, saying why in one line, when the SQLite database could not be kept where it is
 * configured. Once per process: npm start's server checks before it migrates, and Next's start-up hook
 * (the only check under `next start`) then finds it done.
 */
export function exitUnlessStorageFit(): void {
  const env = getEnv();
  if (env.DATABASE_URL || globalForStartup.__mcpTaskServerStorageChecked) return;
  globalForStartup.__mcpTaskServerStorageChecked = true;
  const problem = storageStartProblem(env.DATABASE_PATH, env.STORAGE_MIN_FREE_MB);
  if (!problem) return;
  console.error(problem);
  process.exit(1);
}
