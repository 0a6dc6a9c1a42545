import fs from 'node:fs';
import path from 'node:path';
import { createHmac, randomBytes } from 'node:crypto';
import { deleteInstanceById, getOrCreateGeneratedSecret, insertInstanceUnlessSecretDiffers, renewInstance, type InstanceRow } from '@/db/queries/instances';
import { getEnv } from '@/lib/env';
import { instanceId } from '@/lib/instance';

/**
 * On globalThis because npm start's server and Next's route bundles each load their own copy of this
 * module, and every copy must sign with the same secret and register this instance once.
 */
const globalForSecret = globalThis as unknown as {
  __mcpTaskServerSecret?: string;
  __mcpTaskServerSecretResolution?: Promise<string>;
  __mcpTaskServerInstanceRow?: InstanceRow;
};

/** A refusal to start that the operator can act on; its message is one line. */
export class SecretConflict extends Error {}

/**
 * The server's signing secret (sessions, cursors, request states): AUTH_SECRET (or NEXTAUTH_SECRET) when
 * set, otherwise one generated once and kept: beside the SQLite file, or in PostgreSQL for every instance
 * sharing it. On PostgreSQL the generated one is known only once `resolveServerSecret` has read it, which
 * both mounts do before they serve.
 */
export function getServerSecret(): string {
  if (globalForSecret.__mcpTaskServerSecret) return globalForSecret.__mcpTaskServerSecret;
  const secret = explicitSecret() ?? generatedSecretOnSqlite();
  globalForSecret.__mcpTaskServerSecret = secret;
  return secret;
}

function explicitSecret(): string | undefined {
  return process.env.NEXTAUTH_SECRET || process.env.AUTH_SECRET || undefined;
}

function generatedSecretOnSqlite(): string {
  if (getEnv().DATABASE_URL) {
    throw new Error('The generated signing secret is kept in PostgreSQL and read at start: the server must await resolveServerSecret() before it serves.');
  }
  return readOrCreateSecretFile(secretFile());
}

/** Where one process on SQLite keeps its generated secret (and where earlier versions kept it on PostgreSQL too). */
function secretFile(): string {
  return path.join(path.dirname(path.resolve(getEnv().DATABASE_PATH)), 'secret');
}

/**
 * Settles the signing secret before the server takes requests. On PostgreSQL, an instance started
 * without AUTH_SECRET signs with the secret stored there (the first instance stores it), and every
 * instance joins the running ones only if they sign with the same secret: one with another secret is
 * refused with a SecretConflict, which says what to do. Runs once per process, however many copies of
 * this module call it; a failure (the database out of reach) lets a later call try again.
 */
export function resolveServerSecret(): Promise<string> {
  globalForSecret.__mcpTaskServerSecretResolution ??= resolve().catch((error: unknown) => {
    globalForSecret.__mcpTaskServerSecretResolution = undefined;
    throw error;
  });
  return globalForSecret.__mcpTaskServerSecretResolution;
}

async function resolve(): Promise<string> {
  const env = getEnv();
  if (!env.DATABASE_URL) return getServerSecret();
  const explicit = explicitSecret();
  // An instance of an earlier version kept its generated secret in a file: offering it keeps an
  // upgraded deployment's people signed in.
  const secret = explicit ?? (await getOrCreateGeneratedSecret(readSecretFile(secretFile()) ?? randomBytes(32).toString('hex'), Date.now()));
  const now = Date.now();
  const row: InstanceRow = { id: instanceId, secretFingerprint: fingerprintOf(secret), startedAt: now, expiresAt: now + env.TASK_LEASE_MS };
  const differing = await insertInstanceUnlessSecretDiffers(row, now);
  if (differing > 0) {
    const others = differing === 1 ? 'another instance running on this PostgreSQL database signs' : `${differing} instances running on this PostgreSQL database sign`;
    throw new SecretConflict(
      explicit
        ? `Not starting: ${others} with a different AUTH_SECRET. Start this instance with the same AUTH_SECRET; to change it, stop every instance, then start them all with the new one.`
        : `Not starting: ${others} with an AUTH_SECRET this instance was not given. Start it with the same AUTH_SECRET as the others.`,
    );
  }
  globalForSecret.__mcpTaskServerSecret = secret;
  globalForSecret.__mcpTaskServerInstanceRow = row;
  // Renewed as often as task leases are, and lapsing like them: a stopped instance holds back no change of secret for long.
  setInterval(() => renewThisInstance(env.TASK_LEASE_MS), env.TASK_LEASE_MS / 3).unref();
  return secret;
}

/**
 * For command-line scripts that sign or seal as the server does (OAuth client registration): the
 * secret the running instances sign with, read without joining them. On PostgreSQL without AUTH_SECRET
 * the script stores the generated secret if no instance has yet, as the first instance would.
 */
export async function readServerSecretForScript(): Promise<string> {
  if (!getEnv().DATABASE_URL) return getServerSecret();
  const secret = explicitSecret() ?? (await getOrCreateGeneratedSecret(readSecretFile(secretFile()) ?? randomBytes(32).toString('hex'), Date.now()));
  globalForSecret.__mcpTaskServerSecret = secret;
  return secret;
}

/** Says, without saying the secret, which secret an instance signs with; equal secrets give equal fingerprints. */
function fingerprintOf(secret: string): string {
  return createHmac('sha256', secret).update('mcp task server: instances compare signing secrets').digest('hex');
}

let renewal: Promise<void> | undefined;

function renewThisInstance(leaseMs: number): void {
  const row = globalForSecret.__mcpTaskServerInstanceRow;
  if (renewal || !row) return;
  renewal = renewInstance({ ...row, expiresAt: Date.now() + leaseMs })
    .then(
      () => {},
      (error: unknown) => console.error("Renewing this instance's row failed; an instance with another AUTH_SECRET may start once it lapses", error),
    )
    .finally(() => (renewal = undefined));
}

/** Removes this instance from the running ones (it is stopping), so that a change of secret may follow at once. */
export async function leaveInstances(): Promise<void> {
  const row = globalForSecret.__mcpTaskServerInstanceRow;
  if (!row) return;
  globalForSecret.__mcpTaskServerInstanceRow = undefined;
  // A renewal under way would put the row back after the deletion.
  await renewal;
  await deleteInstanceById(row.id);
}

function readSecretFile(file: string): string | undefined {
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    return existing.length >= 32 ? existing : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function readOrCreateSecretFile(file: string): string {
  const existing = readSecretFile(file);
  if (existing) return existing;
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
