import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { TestServer } from './server';

const root = path.resolve(__dirname, '..', '..');
const tsxCli = path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');

/** Sets a user's password with the real user:password CLI (which reads it from $PASSWORD). */
export function setPassword(server: TestServer, email: string, password: string, flags: string[] = []): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [tsxCli, 'scripts/user-password.ts', '--email', email, ...flags], {
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

/** The id the built app gave a server action: what a page that uses it sends in `Next-Action`. */
function serverActionId(filename: string, exportedName: string): string {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, '.next', 'server', 'server-reference-manifest.json'), 'utf8')) as {
    node: Record<string, { filename: string; exportedName: string }>;
  };
  const found = Object.entries(manifest.node).find(([, entry]) => entry.filename === filename && entry.exportedName === exportedName);
  if (!found) throw new Error(`The build has no server action ${exportedName} in ${filename}`);
  return found[0];
}

/**
 * Calls a server action by hand, as anyone can, through `page` (a page that uses it). `body` is what
 * React's client sends: the arguments as JSON text, or a FormData whose fields `_1_…` are the form an
 * argument `"$K1"` stands for, followed by field `0` holding the arguments (the server reads the fields
 * in order, and resolves `"$K1"` when it reaches `0`).
 */
export async function callServerAction(
  server: TestServer,
  input: { page: string; filename: string; exportedName: string; body: string | FormData; cookie?: string },
): Promise<{ status: number; text: string }> {
  const response = await fetch(`${server.url}${input.page}`, {
    method: 'POST',
    headers: {
      'Next-Action': serverActionId(input.filename, input.exportedName),
      Accept: 'text/x-component',
      ...(typeof input.body === 'string' ? { 'Content-Type': 'text/plain;charset=UTF-8' } : {}),
      ...(input.cookie ? { Cookie: input.cookie } : {}),
    },
    body: input.body,
  });
  return { status: response.status, text: await response.text() };
}

/**
 * Answers a task's one open question in the dashboard, as the person's browser does (the task page's
 * server action, after signing in with a password set for the purpose); waits for the question first.
 */
export async function answerInDashboard(server: TestServer, email: string, taskId: string, answer: string): Promise<void> {
  const pending = () => server.db().prepare("SELECT id FROM task_inputs WHERE task_id = ? AND status = 'pending'").all(taskId) as Array<{ id: string }>;
  const deadline = Date.now() + 20_000;
  while (pending().length !== 1) {
    if (Date.now() > deadline) throw new Error(`Task ${taskId} has ${pending().length} open questions, not one`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const [input] = pending();
  const password = 'correct horse battery staple';
  const set = setPassword(server, email, password);
  if (set.status !== 0) throw new Error(`Setting the password failed: ${set.stderr}`);
  const { sessionCookie } = await signIn(server, email, password);
  const form = new FormData();
  form.set('_1_$action', 'accept');
  form.set('_1_answer', answer);
  form.set('0', JSON.stringify([input.id, { ok: false }, '$K1']));
  const pressed = await callServerAction(server, {
    page: `/tasks/${taskId}`,
    filename: 'app/(dashboard)/tasks/[taskId]/input-actions.ts',
    exportedName: 'answerQuestionAction',
    body: form,
    cookie: sessionCookie,
  });
  if (pressed.status !== 200) throw new Error(`The dashboard refused the answer: ${pressed.status} ${pressed.text}`);
}
