import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { RawMcp } from '../helpers/mcp';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/postgres';
import { WebhookReceiver } from '../helpers/receivers';
import { createToken, runScript, startServer, type TestServer } from '../helpers/server';

/**
 * Notifications from two instances sharing one PostgreSQL database, both delivering: events written on
 * either, targets claimed by either. This file brings its own database, so the test runner runs it once
 * (it is about PostgreSQL, like instances.test.ts).
 */
let database: TestDatabase;
let instances: TestServer[] = [];
const receiver = new WebhookReceiver();

beforeAll(async () => {
  await receiver.start();
  database = await createTestDatabase();
  const env = {
    DATABASE_URL: database.url,
    DATABASE_POOL_SIZE: '4',
    AUTH_SECRET: randomBytes(32).toString('hex'),
    NOTIFY_PRIVATE_HOSTS: `127.0.0.1:${receiver.port}`,
    NOTIFY_RETRY_BASE_MS: '50',
    TASK_MAX_ACTIVE_PER_USER: '1000',
  };
  // Started together: they migrate one at a time under the advisory lock.
  instances = await Promise.all([startServer(env), startServer(env)]);
}, 120_000);

afterAll(async () => {
  if (process.env.SHOW_OUTPUT) for (const instance of instances) console.log(instance.output());
  await Promise.all(instances.map((instance) => instance.stop()));
  await receiver.stop();
  await database?.drop();
});

/** Adds a webhook with the real CLI (against the shared database): a person's with `email`, the operator's without. */
function addWebhook(path: string, options: { email?: string; events?: string[] } = {}): { id: string; secret: string } {
  const args = ['add', '--url', receiver.url(path), ...(options.email ? ['--email', options.email] : []), ...(options.events ?? []).flatMap((event) => ['--event', event])];
  const added = runScript(instances[0], 'webhook', args);
  if (added.status !== 0) throw new Error(`webhook:add failed: ${added.stderr}`);
  return { id: /^id: (.+)$/m.exec(added.stdout)![1], secret: /^secret: (whsec_.+)$/m.exec(added.stdout)![1] };
}

/** One person's clients, one on each instance, with one token. */
async function clientsOf(email: string): Promise<RawMcp[]> {
  const token = createToken(instances[0], email);
  return Promise.all(
    instances.map(async (instance) => {
      const mcp = new RawMcp(instance.mcpUrl, token);
      await mcp.initialize();
      return mcp;
    }),
  );
}

/** The ids of the events delivered to `path`, in the order they arrived, each signature verified. */
function deliveredIds(path: string, secret: string): number[] {
  const hook = new Webhook(secret);
  return receiver.at(path).map((request) => {
    hook.verify(request.body, request.headers);
    return Number(request.headers['webhook-id'].replace(/^evt_/, ''));
  });
}

interface EventRow {
  id: number;
  user_id: string;
  type: string;
}

const events = () => queryRows<EventRow>(database.url, 'SELECT id::int AS id, user_id, type FROM notification_events ORDER BY id');
const userIdOf = async (email: string) => (await queryRows<{ id: string }>(database.url, 'SELECT id FROM users WHERE email = $1', [email]))[0].id;
const outcomesOf = async (targetId: string) =>
  (await queryRows<{ outcome: string }>(database.url, 'SELECT outcome FROM notification_attempts WHERE target_id = $1 ORDER BY id', [targetId])).map((row) => row.outcome);

describe('notifications across instances', () => {
  it('delivers a webhook once when its event is written on the other instance', async () => {
    const [onFirst, onSecond] = await clientsOf('cleo@example.com');
    const hook = addWebhook('/cleo', { email: 'cleo@example.com', events: ['task.completed'] });
    const writtenOnSecond = await onSecond.startDelayTask(0);
    await expect.poll(() => outcomesOf(hook.id), { timeout: 15_000 }).toEqual(['delivered']);
    // A later event, written on the first instance, arrives after it: both instances have moved past the first.
    const writtenOnFirst = await onFirst.startDelayTask(0);
    await expect.poll(() => outcomesOf(hook.id), { timeout: 15_000 }).toEqual(['delivered', 'delivered']);
    const bodies = receiver.at('/cleo').map((request) => new Webhook(hook.secret).verify(request.body, request.headers) as { data: { taskId: string } });
    expect(bodies.map((body) => body.data.taskId)).toEqual([writtenOnSecond.taskId, writtenOnFirst.taskId]);
    const cleo = await userIdOf('cleo@example.com');
    expect(deliveredIds('/cleo', hook.secret)).toEqual((await events()).filter((event) => event.user_id === cleo).map((event) => event.id));
  });

  it('delivers every wanted event exactly once and in order while two people’s events interleave on both instances', async () => {
    const ada = await clientsOf('ada@example.com');
    const ben = await clientsOf('ben@example.com');
    const adaCompleted = addWebhook('/ada-completed', { email: 'ada@example.com', events: ['task.completed'] });
    const benFailed = addWebhook('/ben-failed', { email: 'ben@example.com', events: ['task.failed'] });
    const operator = addWebhook('/operator');
    const [adaId, benId] = [await userIdOf('ada@example.com'), await userIdOf('ben@example.com')];
    const before = (await events()).at(-1)?.id ?? 0;

    // Each round, every client starts a task that completes and one that fails (its arguments do not
    // fit the tool), all at once: the two people's events of both kinds interleave, written by both instances.
    const rounds = 15;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        [...ada, ...ben].flatMap((mcp) => [mcp.startDelayTask(0), mcp.call('tools/call', { name: 'delay', arguments: { seconds: 'soon' }, task: {} })]),
      );
    }
    const total = rounds * 2 * 4;
    const written = async () => (await events()).filter((event) => event.id > before);
    await expect.poll(async () => (await written()).length, { timeout: 30_000 }).toBe(total);
    const all = await written();
    const wanted = {
      adaCompleted: all.filter((event) => event.user_id === adaId && event.type === 'task.completed').map((event) => event.id),
      benFailed: all.filter((event) => event.user_id === benId && event.type === 'task.failed').map((event) => event.id),
      operator: all.map((event) => event.id),
    };
    expect(wanted.adaCompleted).toHaveLength(rounds * 2);
    expect(wanted.benFailed).toHaveLength(rounds * 2);

    // Every wanted event arrives; none twice, none out of order, none of another person or type.
    await expect.poll(() => deliveredIds('/ada-completed', adaCompleted.secret), { timeout: 60_000 }).toEqual(wanted.adaCompleted);
    await expect.poll(() => deliveredIds('/ben-failed', benFailed.secret), { timeout: 60_000 }).toEqual(wanted.benFailed);
    await expect.poll(() => deliveredIds('/operator', operator.secret), { timeout: 60_000 }).toEqual(wanted.operator);
  }, 180_000);
});
