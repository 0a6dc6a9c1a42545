/**
 * Personal access tokens from the command line.
 *   token:create -- --email ada@example.com [--name laptop] [--expires-in-days 30]
 *     creates the user when needed and prints only the new token.
 *   token:revoke -- --token mcp_pat_...
 */
import { parseArgs } from 'node:util';
import { createUser, getUserByEmail } from '@/db/queries/users';
import { issueAccessToken, revokeClearToken } from '@/lib/auth/tokens';
import { ConfigError } from '@/lib/env';
import { z } from 'zod';

const usage = `Usage:
  npm run --silent token:create -- --email <email> [--name <name>] [--expires-in-days <days>]
  npm run --silent token:revoke -- --token <token>`;

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

function create(args: string[]): void {
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
  const user = getUserByEmail(email.data) ?? createUser({ email: email.data });
  const { token } = issueAccessToken({ userId: user.id, name, expiresAt });
  process.stdout.write(`${token}\n`);
}

function revoke(args: string[]): void {
  const { values, positionals } = parseArgs({ args, options: { token: { type: 'string' } }, allowPositionals: true });
  const token = values.token ?? positionals[0];
  if (!token) fail(`--token is required.\n${usage}`);
  if (!revokeClearToken(token)) fail('No such active token: it is unknown or already revoked.');
  console.error('Token revoked.');
}

try {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'create') create(rest);
  else if (command === 'revoke') revoke(rest);
  else fail(usage);
} catch (error) {
  if (error instanceof ConfigError) fail(error.message);
  if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) fail(`${error.message}\n${usage}`);
  throw error;
}
