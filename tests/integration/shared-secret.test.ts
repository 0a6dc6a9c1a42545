import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setPassword, signIn } from '../helpers/dashboard';
import { RawMcp } from '../helpers/mcp';
import { ModernMcp } from '../helpers/modern';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/postgres';
import { createToken, startServer, type TestMount, type TestServer } from '../helpers/server';

/**
 * Instances sharing one PostgreSQL database agree on their signing secret with nothing to configure:
 * started without AUTH_SECRET, they all sign with the one the first stored; one started with a secret
 * that differs from a running instance's stops at start. A is npm start's server and B is `next start`,
 * so both mounts settle the secret before they serve. This file brings its own database, so the test
 * runner runs it once (it is about PostgreSQL, like instances.test.ts).
 */
let database: TestDatabase;
let a: TestServer;
let b: TestServer;
let token: string;
const email = 'ada@example.com';
const password = 'correct horse battery staple';
// Short, so that the row of an instance killed without warning lapses soon.
const leaseMs = 2_000;

/** The environment of every instance here; AUTH_SECRET is left out unless a test sets it. */
function environment(extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: database.url, DATABASE_POOL_SIZE: '4', TASK_LEASE_MS: String(leaseMs), TASK_LIST_PAGE_SIZE: '1', ...extra };
}

/** Starts an instance that must be refused: resolves with its exit status and what it printed. */
async function refusedStart(env: Record<string, string>, mount: TestMount): Promise<{ status: number; lines: string[] }> {
  const started = await startServer(env, mount).then(
    async (server) => {
      await server.stop();
      return undefined;
    },
    (error: Error) => error,
  );
  expect(started, 'the instance started').toBeInstanceOf(Error);
  const [, status, output] = /^server exited with (\d+):\n([\s\S]*)$/.exec(started!.message) ?? [];
  return { status: Number(status), lines: (output ?? started!.message).split('\n').filter((line) => line.trim() !== '') };
}

const liveInstanceRows = () => queryRows<{ id: string }>(database.url, 'SELECT id FROM instances WHERE expires_at > $1', [Date.now()]);

beforeAll(async () => {
  delete process.env.AUTH_SECRET;
  delete process.env.NEXTAUTH_SECRET;
  database = await createTestDatabase();
  // Started together: both find no stored secret, and must still end up signing with the same one.
  [a, b] = await Promise.all([startServer(environment(), 'production-server'), startServer(environment(), 'route-handler')]);
  token = createToken(a, email);
  expect(setPassword(a, email, password).status).toBe(0);
}, 180_000);

afterAll(async () => {
  if (process.env.SHOW_OUTPUT) for (const instance of [a, b]) console.log(instance?.output());
  await Promise.all([a, b].map((instance) => instance?.stop()));
  await database?.drop();
});

describe('instances started without AUTH_SECRET on one PostgreSQL database', () => {
  it('keeps a dashboard session made on one instance signed in on the other', async () => {
    const { sessionCookie } = await signIn(a, email, password);
    expect(sessionCookie).toBeDefined();
    for (const instance of [a, b]) {
      const session = await fetch(`${instance.url}/api/auth/session`, { headers: { Cookie: sessionCookie! } });
      expect(await session.json()).toMatchObject({ user: { email } });
    }
  });

  it('pages on with the other instance from a tasks/list cursor one instance gave', async () => {
    const onA = new RawMcp(a.mcpUrl, token);
    await onA.initialize();
    const started = [await onA.startDelayTask(60), await onA.startDelayTask(60)];
    const firstPage = await onA.call('tasks/list');
    expect(firstPage.tasks).toHaveLength(1);
    expect(firstPage.nextCursor).toEqual(expect.any(String));
    const onB = new RawMcp(b.mcpUrl, token);
    await onB.initialize();
    const secondPage = await onB.call('tasks/list', { cursor: firstPage.nextCursor });
    expect([...firstPage.tasks, ...secondPage.tasks].map((task: { taskId: string }) => task.taskId).sort()).toEqual(started.map((task) => task.taskId).sort());
    for (const task of started) await onA.call('tasks/cancel', { taskId: task.taskId });
  });

  it('takes on one instance the 2026-07-28 requestState the other gave', async () => {
    const call = { name: 'ask_human', arguments: { question: 'Tea or coffee?' } };
    const first = await new ModernMcp(a.mcpUrl, token, { elicitation: {} }).call('tools/call', call);
    expect(first).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    const done = await new ModernMcp(b.mcpUrl, token, { elicitation: {} }).call('tools/call', {
      ...call,
      requestState: first.requestState,
      inputResponses: { answer: { action: 'accept', content: { answer: 'tea' } } },
    });
    expect(done).toMatchObject({ resultType: 'complete', content: expect.arrayContaining([{ type: 'text', text: 'Answer (given in the MCP client): tea' }]) });
  });

  it('stores one secret for them all, and no instance row holds it', async () => {
    const stored = await queryRows<{ secret: string }>(database.url, 'SELECT secret FROM generated_secret');
    expect(stored).toHaveLength(1);
    expect(stored[0].secret).toMatch(/^[0-9a-f]{64}$/);
    const instances = await queryRows<{ secret_fingerprint: string }>(database.url, 'SELECT secret_fingerprint FROM instances');
    expect(instances).toHaveLength(2);
    expect(new Set(instances.map((row) => row.secret_fingerprint)).size).toBe(1);
    expect(instances[0].secret_fingerprint).not.toContain(stored[0].secret);
  });

  it('refuses at start, on either mount, an instance whose AUTH_SECRET differs from the running ones, in one line that says what to do', async () => {
    for (const mount of ['production-server', 'route-handler'] as const) {
      const refused = await refusedStart(environment({ AUTH_SECRET: randomBytes(32).toString('hex') }), mount);
      expect(refused.status).toBe(1);
      const ours = refused.lines.filter((line) => line.includes('AUTH_SECRET'));
      expect(ours).toEqual([
        'Not starting: 2 instances running on this PostgreSQL database sign with a different AUTH_SECRET. Start this instance with the same AUTH_SECRET; to change it, stop every instance, then start them all with the new one.',
      ]);
      // npm start's server prints nothing else; next start prints its banner first.
      if (mount === 'production-server') expect(refused.lines).toEqual(ours);
    }
    expect(await liveInstanceRows()).toHaveLength(2);
  });
});

describe('changing the secret', () => {
  it('starts a new AUTH_SECRET once every instance has stopped: one stopped gracefully at once, one killed when its row lapses', async () => {
    await a.stop();
    expect(await liveInstanceRows()).toHaveLength(1);
    await b.kill9();
    await expect.poll(liveInstanceRows, { timeout: 5 * leaseMs, interval: 200 }).toHaveLength(0);
    const secret = randomBytes(32).toString('hex');
    const rotated = await startServer(environment({ AUTH_SECRET: secret }), 'production-server');
    try {
      expect(await liveInstanceRows()).toHaveLength(1);
      // An instance started without it now would sign with the stored generated secret, which nobody running uses.
      const unconfigured = await refusedStart(environment(), 'production-server');
      expect(unconfigured.status).toBe(1);
      expect(unconfigured.lines).toEqual([
        'Not starting: another instance running on this PostgreSQL database signs with an AUTH_SECRET this instance was not given. Start it with the same AUTH_SECRET as the others.',
      ]);
      const second = await startServer(environment({ AUTH_SECRET: secret }), 'production-server');
      await second.stop();
    } finally {
      await rotated.stop();
    }
  });
});
