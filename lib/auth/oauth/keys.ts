import { generateKeyPairSync, randomUUID, type JsonWebKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { getEnv } from '@/lib/env';

/** How many keys the file keeps: the signing key plus the previous ones, so tokens they signed still verify. */
const keptKeys = 3;

export function signingKeysFile(): string {
  return path.join(path.dirname(path.resolve(getEnv().DATABASE_PATH)), 'oauth-keys.json');
}

function newKey(): JsonWebKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };
}

function readKeys(file: string): JsonWebKey[] | null {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { keys?: JsonWebKey[] };
    return Array.isArray(parsed.keys) && parsed.keys.length > 0 ? parsed.keys : null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function writeKeys(file: string, keys: JsonWebKey[]): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, JSON.stringify({ keys }), { mode: 0o600 });
  fs.renameSync(temporary, file);
}

/**
 * The authorization server's signing keys (ID tokens, signed responses), kept beside the database with
 * mode 0600 and created on first use. The first key signs; the others only verify.
 */
export function loadSigningKeys(): JsonWebKey[] {
  const file = signingKeysFile();
  const existing = readKeys(file);
  if (existing) return existing;
  const created = [newKey()];
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, JSON.stringify({ keys: created }), { mode: 0o600, flag: 'wx' });
    return created;
  } catch (error) {
    // Another process created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readKeys(file) ?? created;
    throw error;
  }
}

/** Puts a new signing key first and drops the oldest beyond the kept ones; takes effect at the next start. */
export function rotateSigningKey(): JsonWebKey {
  const file = signingKeysFile();
  const key = newKey();
  writeKeys(file, [key, ...(readKeys(file) ?? [])].slice(0, keptKeys));
  return key;
}
