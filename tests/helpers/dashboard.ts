import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { TestServer } from './server';

const root = path.resolve(__dirname, '..', '..');
const tsxCli = path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');

/** Sets a user's password with the real user:password CLI (which reads it from $PASSWORD). */
export function setPassword(server: TestServer, email: string, password: string): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [tsxCli, 'scripts/user-password.ts', '--email', email], {
    cwd: root,
    env: { ...process.env, ...server.env, PASSWORD: password },
    encoding: 'utf8',
  });
  return { status: result.status, stderr: result.stderr };
}

/** The cookies a response sets, as a Cookie header. */
export const cookieHeader = (response: Response) =>
  response.headers
    .getSetCookie()
    .map((cookie) => cookie.split(';')[0])
    .join('; ');

/** Signs in the way NextAuth's own browser client does: CSRF token first, then the credentials form (with `headers`). */
export async function signIn(server: TestServer, email: string, password: string, headers: Record<string, string> = {}) {
  const csrf = await fetch(`${server.url}/api/auth/csrf`);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const response = await fetch(`${server.url}/api/auth/callback/credentials`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookieHeader(csrf), ...headers },
    body: new URLSearchParams({ csrfToken, email, password, json: 'true', callbackUrl: '/tasks' }),
  });
  const session = response.headers.getSetCookie().find((cookie) => cookie.startsWith('next-auth.session-token='));
  return { response, sessionCookie: session?.split(';')[0] };
}
