import fs from 'node:fs';
import path from 'node:path';
import webpush from 'web-push';
import { getEnv } from '@/lib/env';

export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

const globalForVapid = globalThis as unknown as { __mcpTaskServerVapid?: VapidKeys };

function readKeys(file: string): VapidKeys | null {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<VapidKeys>;
    return typeof parsed.publicKey === 'string' && typeof parsed.privateKey === 'string' ? { publicKey: parsed.publicKey, privateKey: parsed.privateKey } : null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * The server's VAPID key pair (RFC 8292), which browsers' push services know it by: VAPID_PUBLIC_KEY and
 * VAPID_PRIVATE_KEY when set (instances sharing PostgreSQL need the same pair), otherwise generated at
 * first use and kept beside the database with mode 0600, like the other secrets.
 */
export function getVapidKeys(): VapidKeys {
  if (globalForVapid.__mcpTaskServerVapid) return globalForVapid.__mcpTaskServerVapid;
  const env = getEnv();
  let keys: VapidKeys;
  if (env.VAPID_PUBLIC_KEY && env.VAPID_PRIVATE_KEY) {
    keys = { publicKey: env.VAPID_PUBLIC_KEY, privateKey: env.VAPID_PRIVATE_KEY };
  } else {
    const file = path.join(path.dirname(path.resolve(env.DATABASE_PATH)), 'vapid-keys.json');
    const existing = readKeys(file);
    if (existing) {
      keys = existing;
    } else {
      const created = webpush.generateVAPIDKeys();
      try {
        fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
        fs.writeFileSync(file, JSON.stringify(created), { mode: 0o600, flag: 'wx' });
        keys = created;
      } catch (error) {
        // Another process created it first: use theirs.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        keys = readKeys(file) ?? created;
      }
    }
  }
  globalForVapid.__mcpTaskServerVapid = keys;
  return keys;
}
