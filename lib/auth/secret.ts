import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { getEnv } from '@/lib/env';

const globalForSecret = globalThis as unknown as { __mcpTaskServerSecret?: string };

/**
 * The server's signing secret (sessions, cursors): NEXTAUTH_SECRET when set, otherwise one generated
 * on first start and kept beside the database, so that `npm start` needs no setup and restarts keep
 * signed-in users and cursors valid.
 */
export function getServerSecret(): string {
  if (globalForSecret.__mcpTaskServerSecret) return globalForSecret.__mcpTaskServerSecret;
  const fromEnv = process.env.NEXTAUTH_SECRET || process.env.AUTH_SECRET;
  const secret = fromEnv || readOrCreateSecretFile(path.join(path.dirname(path.resolve(getEnv().DATABASE_PATH)), 'secret'));
  globalForSecret.__mcpTaskServerSecret = secret;
  return secret;
}

function readOrCreateSecretFile(file: string): string {
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (existing.length >= 32) return existing;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  // Only the server's own user may read the secret: it signs every session.
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const created = randomBytes(32).toString('hex');
  try {
    fs.writeFileSync(file, created, { mode: 0o600, flag: 'wx' });
    return created;
  } catch (error) {
    // Another process created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return fs.readFileSync(file, 'utf8').trim();
    throw error;
  }
}
