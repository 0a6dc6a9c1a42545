import { performance } from 'node:perf_hooks';
import { callServerAction, setPassword, signIn } from '../tests/helpers/dashboard';
import { RawMcp } from '../tests/helpers/mcp';
import { PushService, WebhookReceiver } from '../tests/helpers/receivers';
import { createToken, runScript } from '../tests/helpers/server';
import { startOurs } from './peers';
import { fmt, fmtInt, markdownTable, runPool, Samples, sleep } from './util';

// Fewer questions than the 60 messages a minute a person may choose: past those, pushes wait for a digest.
const config = { questions: 50, tasks: 2_000, concurrency: 20 };

/**
 * Being told: how long from a question (the tools/call that starts ask_human) to its webhook delivery and
 * its push reaching the push service, on loopback; and what a person's listening webhook costs the tasks
 * they run (the outbox write in each ending transaction, and its delivery), beside a person with none.
 */
export async function measureNotifications(log: (message: string) => void): Promise<string> {
  const receiver = new WebhookReceiver();
  const pushService = new PushService();
  await receiver.start();
  await pushService.start();
  const ours = await startOurs({ NOTIFY_PRIVATE_HOSTS: '127.0.0.1', NOTIFY_MAX_PER_MINUTE: '60' });
  const { server } = ours;
  try {
    const listener = new RawMcp(server.mcpUrl, createToken(server, 'told@example.com'));
    await listener.initialize();
    const added = runScript(server, 'webhook', ['add', '--email', 'told@example.com', '--url', receiver.url('/told')]);
    if (added.status !== 0) throw new Error(added.stderr);
    setPassword(server, 'told@example.com', 'a long enough password');
    const { sessionCookie } = await signIn(server, 'told@example.com', 'a long enough password');
    await callServerAction(server, {
      page: '/notifications',
      filename: 'app/(dashboard)/notifications/actions.ts',
      exportedName: 'subscribeBrowserAction',
      body: JSON.stringify([pushService.subscribe('bench'), ['task.input_required'], 'Bench browser']),
      cookie: sessionCookie,
    });

    log(`notifications: ${config.questions} questions, one at a time`);
    const webhook = new Samples();
    const push = new Samples();
    for (let i = 0; i < config.questions; i++) {
      const before = { webhook: receiver.at('/told').length, push: pushService.for('bench').length };
      const asked = performance.now();
      await listener.call('tools/call', { name: 'ask_human', arguments: { question: `Question ${i}?` }, task: {} });
      const deadline = Date.now() + 10_000;
      while ((receiver.at('/told').length === before.webhook || pushService.for('bench').length === before.push) && Date.now() < deadline) await sleep(1);
      const hook = receiver.at('/told')[before.webhook];
      const pushed = pushService.for('bench')[before.push];
      if (hook) webhook.add(hook.at - asked);
      else webhook.fail('no webhook delivery within 10 s');
      if (pushed) push.add(pushed.at - asked);
      else push.fail('no push within 10 s');
    }

    log(`notifications: ${config.tasks} tasks to their end, ${config.concurrency} at a time, with and without a listening webhook`);
    const quiet = new RawMcp(server.mcpUrl, createToken(server, 'untold@example.com'));
    await quiet.initialize();
    const endToEnd = (mcp: RawMcp) => async () => {
      const task = await mcp.startDelayTask(0);
      await mcp.call('tasks/result', { taskId: task.taskId });
    };
    // Both people warm up first, so that neither run pays for the other's start.
    await runPool(config.tasks / 10, config.concurrency, endToEnd(quiet));
    await runPool(config.tasks / 10, config.concurrency, endToEnd(listener));
    const without = await runPool(config.tasks, config.concurrency, endToEnd(quiet));
    const withWebhook = await runPool(config.tasks, config.concurrency, endToEnd(listener));
    const delivered = receiver.at('/told').length;

    return [
      markdownTable(
        ['from a question (tools/call sent) to', 'p50 ms', 'p99 ms', 'errors'],
        [
          ['its webhook delivery arriving', fmt(webhook.percentile(50), 1), fmt(webhook.percentile(99), 1), String(webhook.errors)],
          ['its push reaching the push service', fmt(push.percentile(50), 1), fmt(push.percentile(99), 1), String(push.errors)],
        ],
      ),
      '',
      markdownTable(
        ['tasks created and awaited to their end', 'tasks/s', 'p50 ms', 'p99 ms', 'errors'],
        [
          ['a person with no webhook', fmtInt(without.throughput()), fmt(without.percentile(50), 1), fmt(without.percentile(99), 1), String(without.errors)],
          ['a person whose webhook hears every end', fmtInt(withWebhook.throughput()), fmt(withWebhook.percentile(50), 1), fmt(withWebhook.percentile(99), 1), String(withWebhook.errors)],
        ],
      ),
      '',
      `Webhook deliveries made meanwhile: ${fmtInt(delivered)} (questions and ends).`,
    ].join('\n');
  } finally {
    await ours.stop();
    await receiver.stop();
    await pushService.stop();
  }
}
