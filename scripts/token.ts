/**
 * Personal access tokens from the command line.
 *   token:create -- --email ada@example.com [--name laptop] [--expires-in-days 30]
 *     creates the user when needed and prints only the new token.
 *   token:revoke [-- --token mcp_pat_...]
 *     revokes the token; without --token it is read from standard input, so that it appears neither
 *     in the process list nor in the shell's history.
 */
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import { closeStore } from '@/db/client';
import { createUser, getUserByEmail } from '@/db/queries/users';
import { issueAccessToken, revokeClearToken } from '@/lib/auth/tokens';
import { ConfigError } from '@/lib/env';
import { z } from 'zod';

const usage = `Usage:
  npm run --silent token:create -- --email <email> [--name <name>] [--expires-in-days <days>]
  npm run --silent token:revoke              (reads the token from standard input)
  npm run --silent token:revoke -- --token <token>`;

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

async function create(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { email: { type: 'string' }, name: { type: 'string' }, 'expires-in-days': { type: 'string' } },
  });
  const email = z.email().safeParse(values.email?.trim());
  if (!email.success) fail(`--email must be an email address.\n${usage}`);
  const name = values.name?.trim() || 'CLI token';
  let expiresAt: number | null = null;
  if (values['expires-in-days'] !== undefined) {
    const days = Number(values['expires-in-days']);
    if (!Number.isFinite(days) || days <= 0) fail('--expires-in-days must be a positive number.');
    expiresAt = Date.now() + days * 24 * 60 * 60 * 1000;
  }
  const user = (await getUserByEmail(email.data)) ?? (await createUser({ email: email.data }));
  const { token } = await issueAccessToken({ userId: user.id, name, expiresAt });
  process.stdout.write(`${token}\n`);
}

/** The first line of standard input; a person at a terminal is asked for it. */
async function readTokenFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Token to revoke: ');
  const lines = createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    lines.close();
    return line.trim();
  }
  return '';
}

async function revoke(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, options: { token: { type: 'string' } }, allowPositionals: true });
  const token = values.token ?? positionals[0] ?? (await readTokenFromStdin());
  if (!token) fail(`No token given: pass it on standard input or with --token.\n${usage}`);
  if (!(await revokeClearToken(token))) fail('No such active token: it is unknown or already revoked.');
  console.error('Token revoked.');
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'create') await create(rest);
  else if (command === 'revoke') await revoke(rest);
  else fail(usage);
  // A PostgreSQL pool would keep the process alive until its idle connections time out.
  await closeStore();
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) fail(error.message);
  if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) fail(`${error.message}\n${usage}`);
  throw error;
});
