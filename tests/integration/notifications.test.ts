import dns from 'node:dns/promises';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { callServerAction, setPassword, signIn } from '../helpers/dashboard';
import { RawMcp } from '../helpers/mcp';
import { MailSink, PushService, readMail, WebhookReceiver } from '../helpers/receivers';
import { advanceClock, createToken, runScript, shiftedClockEnv, startServer, type TestServer } from '../helpers/server';

let server: TestServer;
const receiver = new WebhookReceiver();
const mail = new MailSink();
const pushService = new PushService();
const password = 'a long enough password';

beforeAll(async () => {
  await receiver.start();
  await mail.start();
  await pushService.start();
  server = await startServer({
    // The receivers' ports only: nothing else on this machine is reachable by a webhook.
    NOTIFY_PRIVATE_HOSTS: `127.0.0.1:${receiver.port},127.0.0.1:${pushService.port}`,
    // Retries after 50, 200, 800, 3200 ms: three failed attempts, the third a 1 s timeout, end well inside
    // the window, and a webhook that keeps failing is marked failing some 4 s after its first attempt.
    NOTIFY_RETRY_BASE_MS: '50',
    NOTIFY_RETRY_WINDOW_MS: '3000',
    WEBHOOK_TIMEOUT_MS: '1000',
    NOTIFY_MAX_PER_MINUTE: '2',
    SMTP_URL: `smtp://127.0.0.1:${mail.port}`,
    SMTP_FROM: 'Tasks <tasks@example.com>',
  });
});

afterAll(async () => {
  if (process.env.SHOW_OUTPUT) console.log(server.output());
  await server?.stop();
  await receiver.stop();
  await mail.stop();
  await pushService.stop();
});

/** Adds a webhook with the real CLI: a person's with `email`, the operator's without. */
function addWebhook(url: string, options: { email?: string; events?: string[] } = {}, on = server): { id: string; secret: string } {
  const args = ['add', '--url', url, ...(options.email ? ['--email', options.email] : []), ...(options.events ?? []).flatMap((event) => ['--event', event])];
  const added = runScript(on, 'webhook', args);
  if (added.status !== 0) throw new Error(`webhook:add failed: ${added.stderr}`);
  const [, id] = /^id: (.+)$/m.exec(added.stdout)!;
  const [, secret] = /^secret: (whsec_.+)$/m.exec(added.stdout)!;
  return { id, secret };
}

async function client(email: string, on = server): Promise<RawMcp> {
  const mcp = new RawMcp(on.mcpUrl, createToken(on, email));
  await mcp.initialize();
  return mcp;
}

/** Every delivery's verified body: a bad signature throws. */
function verified(secret: string, path: string): any[] {
  const hook = new Webhook(secret);
  return receiver.at(path).map((request) => hook.verify(request.body, request.headers));
}

const targetRow = (id: string, on = server) =>
  on.db().prepare('SELECT status, attempts, last_error AS "lastError", cursor, next_attempt_at AS "nextAttemptAt" FROM notification_targets WHERE id = ?').get(id) as any;
const attemptsOf = (id: string, on = server) =>
  on.db().prepare('SELECT message_id AS "messageId", outcome, status_code AS "statusCode", response, error FROM notification_attempts WHERE target_id = ? ORDER BY id').all(id) as any[];

/** Saves a person's e-mail choices through the dashboard's server action. */
const saveEmail = (cookie: string, events: string[], includeDetails = false, on = server) => {
  const form = new FormData();
  for (const event of events) form.append('_1_events', event);
  if (includeDetails) form.set('_1_includeDetails', 'on');
  form.set('0', JSON.stringify([{}, '$K1']));
  return callServerAction(on, { page: '/notifications', filename: 'app/(dashboard)/notifications/actions.ts', exportedName: 'saveEmailAction', body: form, cookie });
};

/** Calls one of the notifications page's server actions, as its page does. */
const notificationsAction = (exportedName: string, body: string | FormData, cookie?: string, on = server) =>
  callServerAction(on, { page: '/notifications', filename: 'app/(dashboard)/notifications/actions.ts', exportedName, body, cookie });

/** A form action's arguments: the previous state and the form, whose fields are `fields`. */
function formArguments(fields: Record<string, string | string[]> = {}): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) for (const entry of [value].flat()) form.append(`_1_${name}`, entry);
  form.set('0', JSON.stringify([{}, '$K1']));
  return form;
}

const userIdOf = (email: string, on = server) => (on.db().prepare('SELECT id FROM users WHERE email = ?').get(email) as { id: string }).id;
const verifiedEmailOf = (email: string, on = server) => (on.db().prepare('SELECT verified_email AS "verifiedEmail" FROM users WHERE email = ?').get(email) as { verifiedEmail: string | null }).verifiedEmail;
const channelsOf = (email: string, on = server) =>
  (on.db().prepare('SELECT channel FROM notification_targets WHERE user_id = ? ORDER BY channel').all(userIdOf(email, on)) as Array<{ channel: string }>).map((row) => row.channel);
const mailsTo = (email: string, sink = mail) => sink.messages.filter((message) => message.to.includes(email));
/** The messages about tasks (not the links that prove the address). */
const taskMailsTo = (email: string, sink = mail) => mailsTo(email, sink).filter((message) => !readMail(message.raw).subject.startsWith('Confirm your address'));

/** Presses "Send confirmation link" and reads the link from the message it mails. */
async function confirmationLink(email: string, cookie: string, on = server, sink = mail): Promise<string> {
  const before = mailsTo(email, sink).length;
  expect((await notificationsAction('sendConfirmationLinkAction', formArguments(), cookie, on)).text).toContain(`"sent":"${email}"`);
  await expect.poll(() => mailsTo(email, sink).length, { timeout: 10_000 }).toBe(before + 1);
  const { subject, text } = readMail(mailsTo(email, sink).at(-1)!.raw);
  expect(subject).toBe('Confirm your address for task notifications');
  return /Confirm that it is yours: (\S+)/.exec(text)![1];
}

/** Opens a link as the browser holding `cookie` would (none: signed out), without following redirects. */
async function openLink(link: string, cookie?: string) {
  const response = await fetch(link, { redirect: 'manual', headers: cookie ? { Cookie: cookie } : {} });
  return { status: response.status, location: response.headers.get('location'), text: await response.text() };
}

/** Proves the account's address the way its owner does: the link mailed to it, opened signed in. */
async function proveAddress(email: string, cookie: string, on = server): Promise<void> {
  expect((await openLink(await confirmationLink(email, cookie, on), cookie)).text).toContain(`${email} is confirmed`);
}

/** A person with a password, signed in: their session cookie. */
async function signedIn(email: string): Promise<string> {
  await client(email);
  expect(setPassword(server, email, password).status).toBe(0);
  return (await signIn(server, email, password)).sessionCookie!;
}

describe('webhooks', () => {
  it('tells the person of a question, signed the Standard Webhooks way, then of how the task ended, in order', async () => {
    const mcp = await client('ada@example.com');
    const { secret } = addWebhook(receiver.url('/ada'), { email: 'ada@example.com' });
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Deploy now?', choices: ['yes', 'no'] }, task: {} });
    await expect.poll(() => receiver.at('/ada').length, { timeout: 10_000 }).toBe(1);
    const [asked] = verified(secret, '/ada');
    expect(asked.type).toBe('task.input_required');
    expect(asked.data).toMatchObject({
      taskId: task.taskId,
      status: 'input_required',
      tool: 'ask_human',
      client: { name: 'raw-test', version: '1.0.0' },
      url: `${server.url}/tasks/${task.taskId}`,
      question: { key: 'answer', message: 'Deploy now?', answerUrl: `${server.url}/tasks/${task.taskId}` },
    });
    expect(asked.data.question.fields).toEqual([expect.objectContaining({ name: 'answer', type: 'string', choices: ['yes', 'no'] })]);
    expect(asked.data).not.toHaveProperty('arguments');
    const [request] = receiver.at('/ada');
    expect(request.headers['webhook-id']).toMatch(/^evt_\d+$/);
    expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(request.headers['content-type']).toBe('application/json');
    // A body changed on the way is caught by the receiver's verification.
    expect(() => new Webhook(secret).verify(request.body.replace('Deploy', 'Delete'), request.headers)).toThrow();

    await mcp.call('tasks/cancel', { taskId: task.taskId });
    const done = await mcp.startDelayTask(0);
    await expect.poll(() => receiver.at('/ada').length, { timeout: 10_000 }).toBe(3);
    const bodies = verified(secret, '/ada');
    expect(bodies.map((body) => [body.type, body.data.taskId])).toEqual([
      ['task.input_required', task.taskId],
      ['task.cancelled', task.taskId],
      ['task.completed', done.taskId],
    ]);
    const ids = receiver.at('/ada').map((entry) => Number(entry.headers['webhook-id'].slice(4)));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it('sends exactly the events a webhook subscribed to, nothing of another user’s tasks, and every user’s to the operator’s', async () => {
    const adaClient = await client('ada@example.com');
    const benClient = await client('ben@example.com');
    const ben = addWebhook(receiver.url('/ben'), { email: 'ben@example.com', events: ['task.completed', 'task.failed'] });
    const operator = addWebhook(receiver.url('/operator'));
    const adaTask = await adaClient.startDelayTask(0);
    const benAsks = (await benClient.call('tools/call', { name: 'ask_human', arguments: { question: 'Ben?' }, task: {} })).task;
    const benDone = await benClient.startDelayTask(0);
    // Arguments that do not fit the tool fail its task.
    const benFailed = (await benClient.call('tools/call', { name: 'delay', arguments: { seconds: 'soon' }, task: {} })).task;
    await expect.poll(() => receiver.at('/operator').length, { timeout: 10_000 }).toBe(4);
    const seen = verified(operator.secret, '/operator').map((body) => [body.type, body.data.taskId]);
    expect(seen).toEqual(
      expect.arrayContaining([
        ['task.completed', adaTask.taskId],
        ['task.input_required', benAsks.taskId],
        ['task.completed', benDone.taskId],
        ['task.failed', benFailed.taskId],
      ]),
    );
    await expect.poll(() => receiver.at('/ben').length, { timeout: 10_000 }).toBe(2);
    const benSeen = verified(ben.secret, '/ben').map((body) => [body.type, body.data.taskId]);
    expect(benSeen).toEqual(
      expect.arrayContaining([
        ['task.completed', benDone.taskId],
        ['task.failed', benFailed.taskId],
      ]),
    );
    // Ben's webhook moved past Ada's task and Ben's question without sending them (its cursor moves once
    // the receiver has answered, a moment after the request arrived).
    const newest = Math.max(...receiver.at('/operator').map((entry) => Number(entry.headers['webhook-id'].slice(4))));
    await expect.poll(() => targetRow(ben.id).cursor).toBeGreaterThanOrEqual(newest);
    expect(receiver.at('/ben')).toHaveLength(2);
  });

  it('retries after 500s and a timeout with the same message id, holding later events back until it is taken', async () => {
    receiver.answer('/flaky', (attempt) => (attempt <= 2 ? { status: 500 } : attempt === 3 ? { status: 200, delayMs: 1500 } : { status: 200 }));
    const mcp = await client('carl@example.com');
    const flaky = addWebhook(receiver.url('/flaky'), { email: 'carl@example.com', events: ['task.completed'] });
    const first = await mcp.startDelayTask(0);
    await expect.poll(() => receiver.at('/flaky').length, { timeout: 5_000 }).toBeGreaterThanOrEqual(1);
    const second = await mcp.startDelayTask(0);
    await expect.poll(() => receiver.at('/flaky').length, { timeout: 15_000 }).toBe(5);
    const bodies = verified(flaky.secret, '/flaky');
    expect(bodies.map((body) => body.data.taskId)).toEqual([first.taskId, first.taskId, first.taskId, first.taskId, second.taskId]);
    const messageIds = receiver.at('/flaky').map((request) => request.headers['webhook-id']);
    expect(new Set(messageIds.slice(0, 4)).size).toBe(1);
    expect(messageIds[4]).not.toBe(messageIds[0]);
    await expect.poll(() => attemptsOf(flaky.id).length).toBe(5);
    const log = attemptsOf(flaky.id);
    expect(log.map((entry) => entry.outcome)).toEqual(['retrying', 'retrying', 'retrying', 'delivered', 'delivered']);
    expect(log[0]).toMatchObject({ statusCode: 500, error: 'HTTP 500' });
    // The receiver is on the operator's private list, which every person may reach: its answers are
    // shown as their status alone, and why a connection failed is in the server's log only.
    expect(log.map((entry) => entry.response)).toEqual([null, null, null, null, null]);
    expect(log[2]).toMatchObject({ statusCode: null, error: expect.stringMatching(/^no answer \(why is in the server log/) });
    expect(server.output()).toMatch(/Delivery to http:\/\/127\.0\.0\.1:\d+ \(allowed by NOTIFY_PRIVATE_HOSTS\) failed: no response within 1000 ms/);
    expect(targetRow(flaky.id)).toMatchObject({ status: 'active', attempts: 0, lastError: null });
  });

  // Its retry window and a dashboard sign-in take 20 s or more on a loaded machine: a limit of its own.
  it('marks a webhook failing after the retry window, says so in the dashboard, and resumes from the event that failed', async () => {
    let down = true;
    receiver.answer('/down', () => (down ? { status: 503 } : { status: 204 }));
    const mcp = await client('dora@example.com');
    const hook = addWebhook(receiver.url('/down'), { email: 'dora@example.com' });
    const task = await mcp.startDelayTask(0);
    await expect.poll(() => targetRow(hook.id).status, { timeout: 15_000 }).toBe('failing');
    expect(targetRow(hook.id).lastError).toBe('HTTP 503');
    expect(attemptsOf(hook.id).at(-1).outcome).toBe('failed');
    const tried = receiver.at('/down').length;
    expect(tried).toBeGreaterThanOrEqual(3);

    expect(setPassword(server, 'dora@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(server, 'dora@example.com', password);
    const page = await (await fetch(`${server.url}/tasks`, { headers: { Cookie: sessionCookie! } })).text();
    expect(page).toContain('A webhook of yours is failing');
    const settings = await (await fetch(`${server.url}/notifications`, { headers: { Cookie: sessionCookie! } })).text();
    expect(settings).toContain('HTTP 503');
    // Nothing more is tried while it is failing.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(receiver.at('/down')).toHaveLength(tried);

    const resume = (body: string, cookie = sessionCookie) =>
      callServerAction(server, { page: '/notifications', filename: 'app/(dashboard)/notifications/actions.ts', exportedName: 'resumeWebhookAction', body, cookie });
    // Wrong types, someone else's webhook and the signed-out are refused, and change nothing.
    expect((await resume(JSON.stringify([42]))).text).toContain('does not exist any more');
    await client('olga@example.com');
    const other = addWebhook(receiver.url('/other'), { email: 'olga@example.com' });
    expect((await resume(JSON.stringify([other.id]))).text).toContain('is not failing, or does not exist');
    // Signed out, the action never runs (the sign-in page answers).
    await resume(JSON.stringify([hook.id]), '');
    expect(targetRow(hook.id).status).toBe('failing');

    down = false;
    expect((await resume(JSON.stringify([hook.id]))).status).toBe(200);
    await expect.poll(() => targetRow(hook.id).status).toBe('active');
    await expect.poll(() => attemptsOf(hook.id).at(-1).outcome, { timeout: 10_000 }).toBe('delivered');
    const delivered = verified(hook.secret, '/down').at(-1);
    expect(delivered).toMatchObject({ type: 'task.completed', data: { taskId: task.taskId } });
  }, 60_000);

  it('sends a test event on request, signed, and logs it', async () => {
    await client('ed@example.com');
    const hook = addWebhook(receiver.url('/test-event'), { email: 'ed@example.com' });
    expect(setPassword(server, 'ed@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(server, 'ed@example.com', password);
    const pressed = await callServerAction(server, {
      page: '/notifications',
      filename: 'app/(dashboard)/notifications/actions.ts',
      exportedName: 'testWebhookAction',
      body: JSON.stringify([hook.id]),
      cookie: sessionCookie,
    });
    expect(pressed.text).toContain('Delivered: HTTP 200');
    const [test] = verified(hook.secret, '/test-event');
    expect(test.type).toBe('webhook.test');
    expect(receiver.at('/test-event')[0].headers['webhook-id']).toMatch(/^test_/);
    expect(attemptsOf(hook.id)).toEqual([expect.objectContaining({ outcome: 'delivered', statusCode: 200 })]);
    // The button makes this server call out: five a minute to one webhook, then it says to wait.
    const press = () =>
      callServerAction(server, { page: '/notifications', filename: 'app/(dashboard)/notifications/actions.ts', exportedName: 'testWebhookAction', body: JSON.stringify([hook.id]), cookie: sessionCookie });
    // Fifty presses at once get the four left: each is counted before it is sent.
    const answers = await Promise.all(Array.from({ length: 50 }, () => press()));
    expect(answers.filter((answer) => answer.text.includes('Delivered: HTTP 200'))).toHaveLength(4);
    expect(answers.filter((answer) => answer.text.includes('At most 5 test events a minute'))).toHaveLength(46);
    expect(receiver.at('/test-event')).toHaveLength(5);
    expect(attemptsOf(hook.id)).toHaveLength(5);
  });

  // Nine runs of the CLI take 20 s or more on a loaded machine: a limit of its own.
  it('refuses private, loopback and link-local addresses when added, and at delivery by the address actually reached', async () => {
    const refused = (url: string, extra: string[] = []) => runScript(server, 'webhook', ['add', '--url', url, '--email', 'ada@example.com', ...extra]);
    for (const url of ['https://10.1.2.3/hooks', 'https://169.254.169.254/latest', 'https://[::1]:8443/', 'https://localhost./x', 'https://192.168.0.1/']) {
      const result = refused(url);
      expect(result.status, url).toBe(2);
      expect(result.stderr, url).toMatch(/private, loopback or link-local/);
    }
    expect(refused('http://example.com/hooks').stderr).toMatch(/Use an https:\/\/ URL/);
    // The operator allowed the receivers' ports on 127.0.0.1, not the host's other ports.
    const otherPort = receiver.port === 65535 ? 65534 : receiver.port + 1;
    expect(refused(`http://127.0.0.1:${otherPort}/hooks`).stderr).toMatch(/Use an https:\/\/ URL/);
    expect(refused(`https://127.0.0.1:${otherPort}/hooks`).stderr).toMatch(/private, loopback or link-local/);
    expect(refused(`http://127.0.0.1/hooks`).stderr).toMatch(/Use an https:\/\/ URL/);
    expect(refused('https://user:secret@example.com/hooks').stderr).toMatch(/no user name or password/);
    expect(refused('not a url').stderr).toMatch(/not a URL/);
    expect(refused('https://example.com/hooks', ['--event', 'task.exploded']).stderr).toMatch(/Unknown event type task\.exploded/);
    expect(runScript(server, 'webhook', ['add', '--url', 'https://example.com/', '--email', 'nobody@example.com']).stderr).toMatch(/No user has the email/);

    // A name that is not on the allow list but resolves to this machine passes the form, and is refused
    // where it matters: at the address the connection would be made to.
    const name = os.hostname();
    const { address } = await dns.lookup(name);
    expect(address).toMatch(/^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|::1$|fe80:)/);
    const mcp = await client('fay@example.com');
    const sneaky = addWebhook(`https://${name}:${receiver.port}/sneaky`, { email: 'fay@example.com' });
    await mcp.startDelayTask(0);
    await expect.poll(() => targetRow(sneaky.id).status, { timeout: 10_000 }).toBe('failing');
    // The person is told the host is not public, not which private address it led to: the log says that.
    expect(attemptsOf(sneaky.id)).toEqual([expect.objectContaining({ outcome: 'refused', error: `${name.toLowerCase()} is not a public address: deliveries go only to public addresses, unless the operator allows the host (NOTIFY_PRIVATE_HOSTS)` })]);
    expect(targetRow(sneaky.id).lastError).not.toContain(address);
    expect(server.output()).toContain(`Refused a delivery to ${name.toLowerCase()}: it resolves to `);
    expect(receiver.requests.filter((request) => request.path === '/sneaky')).toHaveLength(0);
  }, 60_000);
});

describe('e-mail', () => {
  it('mails the question with the client that asked it and a link to answer, without the arguments unless chosen', async () => {
    const mcp = await client('gus@example.com');
    expect(setPassword(server, 'gus@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(server, 'gus@example.com', password);
    expect((await saveEmail(sessionCookie!, ['task.input_required', 'task.exploded'])).text).toContain('could not be read');
    await proveAddress('gus@example.com', sessionCookie!);
    expect((await saveEmail(sessionCookie!, ['task.input_required'])).status).toBe(200);
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Ship the release to production?', fields: { secretNote: { type: 'string', title: 'Note' } } }, task: {} });
    await expect.poll(() => taskMailsTo('gus@example.com').length, { timeout: 10_000 }).toBe(1);
    const [sent] = taskMailsTo('gus@example.com');
    expect(sent.from).toBe('tasks@example.com');
    const { subject, text } = readMail(sent.raw);
    expect(subject).toBe('“ask_human” asks: Ship the release to production?');
    expect(text).toContain('Question: Ship the release to production?');
    expect(text).toContain('Started by: raw-test 1.0.0');
    expect(text).toContain(`Answer it here: ${server.url}/tasks/${task.taskId}`);
    expect(text).not.toContain('secretNote');

    // With details chosen, the next one carries the arguments.
    expect((await saveEmail(sessionCookie!, ['task.input_required', 'task.completed'], true)).status).toBe(200);
    await mcp.call('tasks/cancel', { taskId: task.taskId });
    const detailed = (await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Second?', fields: { secretNote: { type: 'string' } } }, task: {} })).task;
    await expect.poll(() => taskMailsTo('gus@example.com').length, { timeout: 10_000 }).toBe(2);
    const second = readMail(taskMailsTo('gus@example.com')[1].raw);
    expect(second.text).toContain(`${server.url}/tasks/${detailed.taskId}`);
    expect(second.text).toContain('"secretNote"');
  });

  it('keeps quiet about a task whose client is connected live, when the person asks for that', async () => {
    const mcp = await client('liv@example.com');
    expect(setPassword(server, 'liv@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(server, 'liv@example.com', password);
    await proveAddress('liv@example.com', sessionCookie!);
    expect((await saveEmail(sessionCookie!, ['task.input_required'])).status).toBe(200);
    const savePreferences = (fields: Record<string, string>) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.set(`_1_${name}`, value);
      form.set('0', JSON.stringify([{}, '$K1']));
      return callServerAction(server, { page: '/notifications', filename: 'app/(dashboard)/notifications/actions.ts', exportedName: 'savePreferencesAction', body: form, cookie: sessionCookie });
    };
    for (const bad of ['0', '61', 'many', '2.5']) expect((await savePreferences({ quietWhileLive: 'on', maxPerMinute: bad })).text).toContain('from 1 to 60');
    const user = server.db().prepare('SELECT id FROM users WHERE email = ?').get('liv@example.com') as { id: string };
    const preferences = () => server.db().prepare('SELECT quiet_while_live AS quiet, max_per_minute AS "perMinute" FROM notification_preferences WHERE user_id = ?').get(user.id);
    expect(preferences()).toBeUndefined();
    expect((await savePreferences({ quietWhileLive: 'on', maxPerMinute: '10' })).text).not.toContain('from 1 to 60');
    expect(preferences()).toEqual({ quiet: 1, perMinute: 10 });

    const mailsToLiv = () => taskMailsTo('liv@example.com');
    const target = server.db().prepare("SELECT id FROM notification_targets WHERE user_id = ? AND channel = 'email'").get(user.id) as { id: string };
    const stream = await mcp.openGetStream();
    await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Watching?' }, task: {} });
    const asked = () => (server.db().prepare('SELECT max(id) AS id FROM notification_events WHERE user_id = ?').get(user.id) as { id: number }).id;
    await expect.poll(() => asked()).toBeGreaterThan(0);
    // The event is passed over, not sent: its client has a stream open.
    await expect.poll(() => targetRow(target.id).cursor, { timeout: 10_000 }).toBe(asked());
    expect(mailsToLiv()).toHaveLength(0);

    // A question from another client of hers, with no stream open, is sent.
    const other = await client('liv@example.com');
    await other.call('tools/call', { name: 'ask_human', arguments: { question: 'From the other client?' }, task: {} });
    await expect.poll(() => mailsToLiv().length, { timeout: 10_000 }).toBe(1);
    expect(readMail(mailsToLiv()[0].raw).subject).toBe('“ask_human” asks: From the other client?');
    await stream.close();
  });

  it('sends one digest for what piled up while the mail server refused, within the per-minute budget', async () => {
    const mcp = await client('hal@example.com');
    expect(setPassword(server, 'hal@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(server, 'hal@example.com', password);
    await proveAddress('hal@example.com', sessionCookie!);
    expect((await saveEmail(sessionCookie!, ['task.completed'])).status).toBe(200);
    mail.refusing = true;
    const tasks = [await mcp.startDelayTask(0), await mcp.startDelayTask(0), await mcp.startDelayTask(0)];
    const user = server.db().prepare('SELECT id FROM users WHERE email = ?').get('hal@example.com') as { id: string };
    await expect.poll(() => (server.db().prepare('SELECT count(*) AS n FROM notification_events WHERE user_id = ?').get(user.id) as { n: number }).n).toBe(3);
    const target = server.db().prepare("SELECT id FROM notification_targets WHERE user_id = ? AND channel = 'email'").get(user.id) as { id: string };
    await expect.poll(() => attemptsOf(target.id).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    mail.refusing = false;
    await expect.poll(() => taskMailsTo('hal@example.com').length, { timeout: 10_000 }).toBe(1);
    const digest = readMail(taskMailsTo('hal@example.com')[0].raw);
    expect(digest.subject).toBe('3 tasks ended');
    for (const task of tasks) expect(digest.text).toContain(`${server.url}/tasks/${task.taskId}`);
    // The sink has the message before the server, told it was taken, logs the attempt.
    await expect.poll(() => attemptsOf(target.id).at(-1)?.outcome).toBe('delivered');
  });

  it('turns e-mail on only for an address proved by a link sent to it, used once, signed in as its account', async () => {
    const cookie = await signedIn('pam@example.com');
    // Sign-up proved nothing: e-mail cannot be turned on, and the page says how to confirm.
    expect((await saveEmail(cookie, ['task.input_required'])).text).toContain('Confirm pam@example.com first');
    expect(channelsOf('pam@example.com')).toEqual([]);
    const page = await (await fetch(`${server.url}/notifications`, { headers: { Cookie: cookie } })).text();
    expect(page).toContain('Send confirmation link');

    const link = await confirmationLink('pam@example.com', cookie);
    expect(new URL(link).pathname).toBe('/notifications/confirm');
    // Signed out (a mail scanner following the link), it leads to sign-in and back, and proves nothing.
    const signedOut = await openLink(link);
    expect(signedOut.status).toBe(307);
    expect(decodeURIComponent(signedOut.location!)).toContain(`callbackUrl=${new URL(link).pathname}${new URL(link).search}`);
    // Another account's session, and a link whose claims were changed, are refused and change nothing.
    const other = await signedIn('quin@example.com');
    expect((await openLink(link, other)).text).toContain('This link was sent for another account, not quin@example.com');
    const [header, payload, signature] = new URL(link).searchParams.get('token')!.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = new URL(link);
    forged.searchParams.set('token', [header, Buffer.from(JSON.stringify({ ...claims, email: 'quin@example.com', sub: userIdOf('quin@example.com') })).toString('base64url'), signature].join('.'));
    expect((await openLink(forged.toString(), other)).text).toContain('This link is not one this server sent, or it was changed on the way');
    expect((await openLink(`${server.url}/notifications/confirm?token=nonsense`, cookie)).text).toContain('This link is not one this server sent');
    expect((await openLink(`${server.url}/notifications/confirm`, cookie)).text).toContain('This page needs the link from the confirmation e-mail');
    expect(verifiedEmailOf('pam@example.com')).toBeNull();
    expect(verifiedEmailOf('quin@example.com')).toBeNull();

    expect((await openLink(link, cookie)).text).toContain('pam@example.com is confirmed: e-mail notifications can go to it.');
    expect(verifiedEmailOf('pam@example.com')).toBe('pam@example.com');
    // Each link works once.
    expect((await openLink(link, cookie)).text).toContain('This link was used already (each works once), and pam@example.com is confirmed.');
    expect((await saveEmail(cookie, ['task.input_required'])).text).not.toContain('Confirm');
    expect(channelsOf('pam@example.com')).toEqual(['email']);

    // Each press mails an address: three links an hour, then the button says to wait.
    await confirmationLink('pam@example.com', cookie);
    await confirmationLink('pam@example.com', cookie);
    const sent = mailsTo('pam@example.com').length;
    expect((await notificationsAction('sendConfirmationLinkAction', formArguments(), cookie)).text).toMatch(/At most 3 links an hour: open the newest one you were sent, or try again in \d+ minutes/);
    expect(mailsTo('pam@example.com')).toHaveLength(sent);
  });

  it('mails at most three confirmation links an hour, however many presses arrive at once', async () => {
    const cookie = await signedIn('una@example.com');
    const presses = await Promise.all(Array.from({ length: 12 }, () => notificationsAction('sendConfirmationLinkAction', formArguments(), cookie)));
    expect(presses.filter((press) => press.text.includes('"sent":"una@example.com"'))).toHaveLength(3);
    expect(presses.filter((press) => /At most 3 links an hour/.test(press.text))).toHaveLength(9);
    await expect.poll(() => mailsTo('una@example.com').length, { timeout: 10_000 }).toBe(3);
    expect((server.db().prepare('SELECT count(*) AS n FROM email_confirmations WHERE user_id = ?').get(userIdOf('una@example.com')) as { n: number }).n).toBe(3);
  });

  it('holds e-mail to an address nobody proved (an account from before addresses were proved) until it is proved', async () => {
    const mcp = await client('rex@example.com');
    const cookie = await signedIn('rex@example.com');
    await proveAddress('rex@example.com', cookie);
    expect((await saveEmail(cookie, ['task.input_required'])).status).toBe(200);
    // As the upgrade leaves an account whose e-mail was on: no address proved.
    server.db().prepare('UPDATE users SET verified_email = NULL WHERE id = ?').run(userIdOf('rex@example.com'));
    const target = server.db().prepare("SELECT id FROM notification_targets WHERE user_id = ? AND channel = 'email'").get(userIdOf('rex@example.com')) as { id: string };
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Held for rex?' }, task: {} });
    // The notifier looked at it and put it off for the hour, sending nothing and moving no cursor.
    const nextAttempt = () => (server.db().prepare('SELECT next_attempt_at AS "at" FROM notification_targets WHERE id = ?').get(target.id) as { at: number }).at;
    await expect.poll(nextAttempt, { timeout: 10_000 }).toBeGreaterThan(Date.now() + 30 * 60_000);
    expect(taskMailsTo('rex@example.com')).toHaveLength(0);
    expect(attemptsOf(target.id)).toEqual([]);
    const page = await (await fetch(`${server.url}/notifications`, { headers: { Cookie: cookie } })).text();
    expect(page).toContain('E-mail is paused, its events waiting, until');
    // Changing the choices is refused until then; turning e-mail off is not.
    expect((await saveEmail(cookie, ['task.input_required', 'task.completed'])).text).toContain('Confirm rex@example.com first');

    await proveAddress('rex@example.com', cookie);
    await expect.poll(() => taskMailsTo('rex@example.com').length, { timeout: 10_000 }).toBe(1);
    expect(readMail(taskMailsTo('rex@example.com')[0].raw).text).toContain(`${server.url}/tasks/${task.taskId}`);
  });
});

describe('e-mail links that expire', () => {
  it('refuses a confirmation link used after its hour, proving nothing', async () => {
    const sink = new MailSink();
    await sink.start();
    const clockServer = await startServer({ ...shiftedClockEnv(), SMTP_URL: `smtp://127.0.0.1:${sink.port}` });
    try {
      createToken(clockServer, 'late@example.com');
      expect(setPassword(clockServer, 'late@example.com', password).status).toBe(0);
      const { sessionCookie } = await signIn(clockServer, 'late@example.com', password);
      const link = await confirmationLink('late@example.com', sessionCookie!, clockServer, sink);
      await advanceClock(clockServer, 61 * 60_000);
      expect((await openLink(link, sessionCookie)).text).toContain('This link has expired: links work for an hour. Send a new one from Notifications.');
      expect(verifiedEmailOf('late@example.com', clockServer)).toBeNull();
      const used = clockServer.db().prepare('SELECT used_at AS "usedAt" FROM email_confirmations WHERE user_id = ?').all(userIdOf('late@example.com', clockServer));
      expect(used).toEqual([{ usedAt: null }]);
    } finally {
      await clockServer.stop();
      fs.rmSync(clockServer.env.CLOCK_OFFSET_FILE, { force: true });
      await sink.stop();
    }
  });
});

describe('when sessions end', () => {
  const subscribe = (cookie: string, subscription: unknown) =>
    notificationsAction('subscribeBrowserAction', JSON.stringify([subscription, ['task.input_required'], 'Test browser']), cookie);
  const signOutEverywhere = (cookie: string, choice: { alsoTokensAndApps: boolean; alsoNotifications: boolean }) =>
    callServerAction(server, { page: '/tasks', filename: 'app/(auth)/actions.ts', exportedName: 'signOutEverywhereAction', body: JSON.stringify([choice]), cookie });
  const pushRows = (email: string) =>
    server.db().prepare("SELECT address, session_generation AS generation FROM notification_targets WHERE user_id = ? AND channel = 'push' ORDER BY address").all(userIdOf(email)) as Array<{
      address: string;
      generation: number;
    }>;

  it('tells a browser nothing once the sessions it was subscribed in have ended', async () => {
    const mcp = await client('sid@example.com');
    const first = await signedIn('sid@example.com');
    expect((await subscribe(first, pushService.subscribe('sid-laptop'))).status).toBe(200);
    const generation = (server.db().prepare('SELECT session_generation AS g FROM users WHERE email = ?').get('sid@example.com') as { g: number }).g;
    expect(pushRows('sid@example.com')).toEqual([{ address: expect.stringContaining('/push/sid-laptop'), generation }]);
    // The sessions end where the subscription is not removed with them (another instance, an older
    // version): the notifier itself finds the browser is no longer the person's, and drops it unpushed.
    server.db().prepare('UPDATE users SET session_generation = session_generation + 1 WHERE email = ?').run('sid@example.com');
    await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Sid?' }, task: {} });
    await expect.poll(() => pushRows('sid@example.com'), { timeout: 10_000 }).toEqual([]);
    expect(pushService.for('sid-laptop')).toEqual([]);

    // Sign out everywhere removes the browsers subscribed before, at once; a new password too.
    const second = (await signIn(server, 'sid@example.com', password)).sessionCookie!;
    expect((await subscribe(second, pushService.subscribe('sid-phone'))).status).toBe(200);
    expect((await signOutEverywhere(second, { alsoTokensAndApps: false, alsoNotifications: false })).text).toContain('"ok":true');
    expect(pushRows('sid@example.com')).toEqual([]);
    const third = (await signIn(server, 'sid@example.com', password)).sessionCookie!;
    expect((await subscribe(third, pushService.subscribe('sid-tablet'))).status).toBe(200);
    expect(setPassword(server, 'sid@example.com', 'a new long enough password').status).toBe(0);
    expect(pushRows('sid@example.com')).toEqual([]);
  });

  it('removes webhooks, e-mail and preferences with the sessions when asked, by sign out everywhere or user:password', async () => {
    const cookie = await signedIn('tess@example.com');
    await proveAddress('tess@example.com', cookie);
    const setUp = async (session: string) => {
      addWebhook(receiver.url('/tess'), { email: 'tess@example.com' });
      expect((await notificationsAction('saveEmailAction', formArguments({ events: 'task.input_required' }), session)).status).toBe(200);
      expect((await notificationsAction('savePreferencesAction', formArguments({ maxPerMinute: '5' }), session)).status).toBe(200);
      expect((await subscribe(session, pushService.subscribe(`tess-${Math.random()}`))).status).toBe(200);
      expect(channelsOf('tess@example.com')).toEqual(['email', 'push', 'webhook']);
    };
    const preferences = () => server.db().prepare('SELECT count(*) AS n FROM notification_preferences WHERE user_id = ?').get(userIdOf('tess@example.com'));
    await setUp(cookie);
    // Not asked: only the browsers go, with their sessions.
    expect((await signOutEverywhere(cookie, { alsoTokensAndApps: false, alsoNotifications: false })).text).toContain('"ok":true');
    expect(channelsOf('tess@example.com')).toEqual(['email', 'webhook']);
    expect(preferences()).toEqual({ n: 1 });

    const again = (await signIn(server, 'tess@example.com', password)).sessionCookie!;
    expect((await subscribe(again, pushService.subscribe('tess-again'))).status).toBe(200);
    expect((await signOutEverywhere(again, { alsoTokensAndApps: false, alsoNotifications: true })).text).toContain('"ok":true');
    expect(channelsOf('tess@example.com')).toEqual([]);
    expect(preferences()).toEqual({ n: 0 });

    const third = (await signIn(server, 'tess@example.com', password)).sessionCookie!;
    await setUp(third);
    const kept = setPassword(server, 'tess@example.com', 'a second long enough password');
    expect(kept.stderr).toContain('Their webhooks and e-mail notifications still deliver (browsers subscribed before no longer do): add --remove-notifications');
    expect(channelsOf('tess@example.com')).toEqual(['email', 'webhook']);
    const removed = setPassword(server, 'tess@example.com', 'a third long enough password', ['--remove-notifications']);
    expect(removed.stderr).toContain('Their webhooks, subscribed browsers and e-mail notifications are removed.');
    expect(channelsOf('tess@example.com')).toEqual([]);
    expect(preferences()).toEqual({ n: 0 });
    // Nine command-line runs and sign-ins, each starting tsx or hashing a password with scrypt: about 8 s
    // alone, past 30 s while the machine runs other suites.
  }, 60_000);

  it('forgets the browser signed out of, and lets a browser tell one person at most', async () => {
    const mcp = await client('uma@example.com');
    const uma = await signedIn('uma@example.com');
    const vic = await signedIn('vic@example.com');
    const shared = pushService.subscribe('shared-pc');
    const phone = pushService.subscribe('uma-phone');
    expect((await subscribe(uma, shared)).status).toBe(200);
    expect((await subscribe(uma, phone)).status).toBe(200);
    // Another person cannot make Uma's browser forget her; signing out of the shared computer does.
    expect((await notificationsAction('forgetBrowserAction', JSON.stringify([shared.endpoint]), vic)).text).toContain('"removed":false');
    expect(pushRows('uma@example.com')).toHaveLength(2);
    expect((await notificationsAction('forgetBrowserAction', JSON.stringify([shared.endpoint]), uma)).text).toContain('"removed":true');
    expect(pushRows('uma@example.com').map((row) => row.address)).toEqual([expect.stringContaining('/push/uma-phone')]);

    // Uma subscribes the shared computer again and leaves without signing out; Vic subscribes it next.
    expect((await subscribe(uma, shared)).status).toBe(200);
    expect((await subscribe(vic, shared)).status).toBe(200);
    expect(pushRows('uma@example.com').map((row) => row.address)).toEqual([expect.stringContaining('/push/uma-phone')]);
    expect(pushRows('vic@example.com').map((row) => row.address)).toEqual([expect.stringContaining('/push/shared-pc')]);
    await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Only for Uma?' }, task: {} });
    await expect.poll(() => pushService.for('uma-phone').length, { timeout: 10_000 }).toBe(1);
    expect(pushService.for('shared-pc')).toEqual([]);
  });
});

describe('browser push', () => {
  const subscribe = (cookie: string, subscription: unknown, events: string[] = ['task.input_required']) =>
    callServerAction(server, {
      page: '/notifications',
      filename: 'app/(dashboard)/notifications/actions.ts',
      exportedName: 'subscribeBrowserAction',
      body: JSON.stringify([subscription, events, 'Test browser']),
      cookie,
    });

  it('pushes a question, VAPID-signed and encrypted for the subscription, to the browser’s push service', async () => {
    const mcp = await client('jo@example.com');
    expect(setPassword(server, 'jo@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(server, 'jo@example.com', password);
    expect((await subscribe(sessionCookie!, pushService.subscribe('jo-laptop'))).status).toBe(200);
    // The same browser subscribing again replaces its subscription rather than adding one.
    const again = pushService.subscribe('jo-laptop');
    expect((await subscribe(sessionCookie!, again)).status).toBe(200);
    const user = server.db().prepare('SELECT id FROM users WHERE email = ?').get('jo@example.com') as { id: string };
    expect(server.db().prepare("SELECT count(*) AS n FROM notification_targets WHERE user_id = ? AND channel = 'push'").get(user.id)).toEqual({ n: 1 });

    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Merge the pull request?', choices: ['yes', 'no'] }, task: {} });
    await expect.poll(() => pushService.for('jo-laptop').length, { timeout: 10_000 }).toBe(1);
    const [push] = pushService.for('jo-laptop');
    // Signed with the server's own VAPID key, kept beside its database like its other secrets.
    const keysFile = path.join(server.dataDir, 'vapid-keys.json');
    expect(push.vapidKey).toBe(JSON.parse(fs.readFileSync(keysFile, 'utf8')).publicKey);
    expect(fs.statSync(keysFile).mode & 0o777).toBe(0o600);
    expect(push.claims.sub).toMatch(/^https:\/\/localhost/);
    expect(push.urgency).toBe('high');
    expect(JSON.parse(push.payload)).toEqual({
      title: 'ask_human needs you',
      body: 'Merge the pull request?',
      url: `${server.url}/tasks/${task.taskId}`,
      tag: task.taskId,
      question: { taskId: task.taskId, message: 'Merge the pull request?' },
    });
    expect(pushService.refusals).toEqual([]);
  });

  it('forgets a subscription its push service says is gone (410), and refuses ones it cannot use', async () => {
    const mcp = await client('kim@example.com');
    expect(setPassword(server, 'kim@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(server, 'kim@example.com', password);
    const gone = pushService.subscribe('kim-old-phone', 410);
    expect((await subscribe(sessionCookie!, gone)).status).toBe(200);
    const user = server.db().prepare('SELECT id FROM users WHERE email = ?').get('kim@example.com') as { id: string };
    const pushTargets = () => server.db().prepare("SELECT count(*) AS n FROM notification_targets WHERE user_id = ? AND channel = 'push'").get(user.id) as { n: number };
    expect(pushTargets().n).toBe(1);
    await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Anyone?' }, task: {} });
    await expect.poll(() => pushService.for('kim-old-phone').length, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => pushTargets().n).toBe(0);

    const good = pushService.subscribe('kim-new-phone');
    const refusedText = async (subscription: unknown, events?: string[]) => (await subscribe(sessionCookie!, subscription, events)).text;
    expect(await refusedText({ ...good, endpoint: 'https://10.0.0.1/push/x' })).toContain('private, loopback or link-local');
    expect(await refusedText({ ...good, endpoint: 'http://push.example.com/x' })).toContain('Use an https:// URL');
    expect(await refusedText({ ...good, keys: { p256dh: 'short', auth: good.keys.auth } })).toContain('cannot use');
    expect(await refusedText({ endpoint: good.endpoint })).toContain('cannot use');
    expect(await refusedText(good, ['task.exploded'])).toContain('cannot use');
    expect(await refusedText(good, [])).toContain('Choose at least one event');
    expect(pushTargets().n).toBe(0);
  });
});

describe('after kill -9', () => {
  it('delivers an event that was waiting for its webhook when the server died', async () => {
    let up = false;
    receiver.answer('/later', () => (up ? { status: 200 } : { status: 500 }));
    const mcp = await client('ivy@example.com');
    const hook = addWebhook(receiver.url('/later'), { email: 'ivy@example.com', events: ['task.completed'] });
    const task = await mcp.startDelayTask(0);
    await expect.poll(() => receiver.at('/later').length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    await server.kill9();
    up = true;
    const before = receiver.at('/later').length;
    await server.restart();
    await expect.poll(() => receiver.at('/later').length, { timeout: 15_000 }).toBeGreaterThan(before);
    await expect.poll(() => attemptsOf(hook.id).at(-1)?.outcome, { timeout: 10_000 }).toBe('delivered');
    const bodies = verified(hook.secret, '/later');
    expect(bodies.at(-1)).toMatchObject({ type: 'task.completed', data: { taskId: task.taskId } });
    expect(new Set(receiver.at('/later').map((request) => request.headers['webhook-id'])).size).toBe(1);
  });
});

/**
 * A second server whose webhooks wait up to a minute for an answer (so that endpoints which answer only
 * when a test lets them are slow, not failed), whose clock a test moves (the per-minute budget, ttls),
 * and whose sweeper looks for expired tasks every 200 ms. Moving its clock needs the signal to reach
 * the process that runs the app, so it runs on npm start's server whichever mount is under test: the
 * notifier is the same on both.
 */
describe('slow endpoints, the per-minute budget and expiry', () => {
  let slow: TestServer;

  beforeAll(async () => {
    slow = await startServer(
      {
        ...shiftedClockEnv(),
        NOTIFY_PRIVATE_HOSTS: `127.0.0.1:${receiver.port}`,
        WEBHOOK_TIMEOUT_MS: '60000',
        NOTIFY_MAX_PER_MINUTE: '2',
        TASK_DEFAULT_TTL_MS: '120000',
        TASK_MAX_TTL_MS: '120000',
        TASK_SWEEP_INTERVAL_MS: '200',
        SMTP_URL: `smtp://127.0.0.1:${mail.port}`,
        SMTP_FROM: 'Tasks <tasks@example.com>',
      },
      'production-server',
    );
  });

  afterAll(async () => {
    if (process.env.SHOW_OUTPUT) console.log(slow?.output());
    await slow?.stop();
    if (slow) fs.rmSync(slow.env.CLOCK_OFFSET_FILE, { force: true });
  });

  // Eleven webhooks added with the CLI take ten seconds or more on a loaded machine: a limit of its own.
  it('delivers a person’s events while another person’s endpoints hold theirs, and holds at most three of one person at once', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const slowPaths = Array.from({ length: 10 }, (_, index) => `/held-${index}`);
    for (const path of slowPaths) receiver.answer(path, () => ({ status: 200, after: released }));
    const heldRequests = () => slowPaths.flatMap((path) => receiver.at(path));
    try {
      const ada = await client('ada@example.com', slow);
      const adaHooks = slowPaths.map((path) => addWebhook(receiver.url(path), { email: 'ada@example.com', events: ['task.completed'] }, slow));
      const ben = await client('ben@example.com', slow);
      const benHook = addWebhook(receiver.url('/not-held'), { email: 'ben@example.com', events: ['task.completed'] }, slow);

      await ada.startDelayTask(0);
      await expect.poll(() => heldRequests().length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
      const benTask = await ben.startDelayTask(0);
      await expect.poll(() => attemptsOf(benHook.id, slow).at(-1)?.outcome, { timeout: 10_000 }).toBe('delivered');
      expect(verified(benHook.secret, '/not-held')).toEqual([expect.objectContaining({ type: 'task.completed', data: expect.objectContaining({ taskId: benTask.taskId }) })]);
      // Ada's other seven wait for one of her own three places, not for anyone else's.
      expect(heldRequests()).toHaveLength(3);

      release();
      await expect.poll(() => heldRequests().length, { timeout: 15_000 }).toBe(10);
      for (const hook of adaHooks) await expect.poll(() => attemptsOf(hook.id, slow).map((attempt) => attempt.outcome), { timeout: 10_000 }).toEqual(['delivered']);
      for (const path of slowPaths) expect(receiver.at(path)).toHaveLength(1);
    } finally {
      release();
    }
  }, 90_000);

  it('sends two messages within a budget of two a minute, then the next three events as one digest when the minute is over', async () => {
    const mcp = await client('nia@example.com', slow);
    expect(setPassword(slow, 'nia@example.com', password).status).toBe(0);
    const { sessionCookie } = await signIn(slow, 'nia@example.com', password);
    await proveAddress('nia@example.com', sessionCookie!, slow);
    expect((await saveEmail(sessionCookie!, ['task.completed'], false, slow)).status).toBe(200);
    const mailsToNia = () => taskMailsTo('nia@example.com').map((message) => readMail(message.raw));
    const user = slow.db().prepare('SELECT id FROM users WHERE email = ?').get('nia@example.com') as { id: string };
    const target = slow.db().prepare("SELECT id FROM notification_targets WHERE user_id = ? AND channel = 'email'").get(user.id) as { id: string };

    const first = await mcp.startDelayTask(0);
    await expect.poll(() => mailsToNia().length, { timeout: 10_000 }).toBe(1);
    const second = await mcp.startDelayTask(0);
    await expect.poll(() => mailsToNia().length, { timeout: 10_000 }).toBe(2);
    expect(mailsToNia().map((message) => message.subject)).toEqual(['“delay” completed', '“delay” completed']);
    expect(mailsToNia().map((message) => message.text.includes(`${slow.url}/tasks/${first.taskId}`))).toEqual([true, false]);
    expect(mailsToNia().map((message) => message.text.includes(`${slow.url}/tasks/${second.taskId}`))).toEqual([false, true]);

    const later = [await mcp.startDelayTask(0), await mcp.startDelayTask(0), await mcp.startDelayTask(0)];
    await expect.poll(() => (slow.db().prepare('SELECT count(*) AS n FROM notification_events WHERE user_id = ?').get(user.id) as { n: number }).n, { timeout: 10_000 }).toBe(5);
    // The budget is spent: the e-mail is put off until its minute is over.
    await expect.poll(() => Number(targetRow(target.id, slow).nextAttemptAt), { timeout: 10_000 }).toBeGreaterThan(0);
    expect(mailsToNia()).toHaveLength(2);

    await advanceClock(slow, 61_000);
    await expect.poll(() => mailsToNia().length, { timeout: 10_000 }).toBe(3);
    const digest = mailsToNia()[2];
    expect(digest.subject).toBe('3 tasks ended');
    for (const task of later) expect(digest.text).toContain(`${slow.url}/tasks/${task.taskId}`);
    await expect.poll(() => attemptsOf(target.id, slow).map((attempt) => attempt.outcome)).toEqual(['delivered', 'delivered', 'delivered']);
  });

  it('tells of a task that expired while working and of one that expired waiting for an answer', async () => {
    const mcp = await client('otto@example.com', slow);
    const hook = addWebhook(receiver.url('/expired'), { email: 'otto@example.com', events: ['task.expired'] }, slow);
    const working = await mcp.startDelayTask(3600);
    const asking = (await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Still there?' }, task: {} })).task;
    await expect.poll(async () => (await mcp.call('tasks/get', { taskId: asking.taskId })).status, { timeout: 10_000 }).toBe('input_required');
    expect((await mcp.call('tasks/get', { taskId: working.taskId })).status).toBe('working');

    await advanceClock(slow, 121_000);
    await expect.poll(() => receiver.at('/expired').length, { timeout: 10_000 }).toBe(2);
    const told = verified(hook.secret, '/expired');
    expect(told.map((body) => body.type)).toEqual(['task.expired', 'task.expired']);
    expect(told.map((body) => [body.data.taskId, body.data.status]).sort()).toEqual(
      [
        [working.taskId, 'working'],
        [asking.taskId, 'input_required'],
      ].sort(),
    );
    await expect.poll(() => attemptsOf(hook.id, slow).map((attempt) => attempt.outcome)).toEqual(['delivered', 'delivered']);
  });
});
