import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { deleteUpstreamCredential, getUpstreamCredential, listUpstreamCredentials, putUpstreamCredential } from '@/db/queries/upstream-credentials';
import { getServerSecret } from '@/lib/auth/secret';

/**
 * Each person's own secret for an upstream server whose entry has `perUserHeader`: sealed with
 * AES-256-GCM (node:crypto) under a key derived (HKDF-SHA256) from the server's signing secret, with the
 * person and the server as additional data, so that a sealed secret copied to another person's row or
 * another server's does not open. Stored once, never shown again, used only for that person's calls.
 */
const version = 'v1';

function key(): Buffer {
  return Buffer.from(hkdfSync('sha256', getServerSecret(), Buffer.alloc(0), 'mcp task server: upstream credentials v1', 32));
}

const additionalData = (userId: string, serverName: string) => Buffer.from(`${userId}\u0000${serverName}`);

export function sealSecret(secret: string, userId: string, serverName: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key(), iv);
  cipher.setAAD(additionalData(userId, serverName));
  const encrypted = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return [version, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), encrypted.toString('base64url')].join('.');
}

/** The secret, or undefined when it does not open (another person's, another server's, or sealed under another signing secret). */
export function openSecret(sealed: string, userId: string, serverName: string): string | undefined {
  const [tag, iv, authTag, encrypted] = sealed.split('.');
  if (tag !== version || !iv || !authTag || encrypted === undefined) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key(), Buffer.from(iv, 'base64url'));
    decipher.setAAD(additionalData(userId, serverName));
    decipher.setAuthTag(Buffer.from(authTag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(encrypted, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

export async function saveUpstreamSecret(userId: string, serverName: string, secret: string): Promise<void> {
  await putUpstreamCredential({ userId, serverName, sealed: sealSecret(secret, userId, serverName), createdAt: Date.now() });
}

export async function removeUpstreamSecret(userId: string, serverName: string): Promise<boolean> {
  return (await deleteUpstreamCredential(userId, serverName)) > 0;
}

export async function readUpstreamSecret(userId: string, serverName: string): Promise<string | undefined> {
  const row = await getUpstreamCredential(userId, serverName);
  return row ? openSecret(row.sealed, userId, serverName) : undefined;
}

/** The servers this person has given a secret for, and when. */
export async function upstreamSecretsOf(userId: string): Promise<Map<string, number>> {
  return new Map((await listUpstreamCredentials(userId)).map((row) => [row.serverName, row.createdAt]));
}
