import { CallToolResultSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../helpers/cluster';
import { callServerAction, setPassword, signIn } from '../helpers/dashboard';
import { connectSdk2Client, connectSdkClient, messagesOf, RawMcp, replyOf, SseReader, untilNotRefused, type RpcReply } from '../helpers/mcp';
import { BrowserSession, pkcePair, publicClientMetadata, registerClient, tokenRequest } from '../helpers/oauth';
import { createToken, type TestServer } from '../helpers/server';

/**
 * Three instances on one PostgreSQL database behind HAProxy (deploy/haproxy.cfg), and the same
 * instances addressed one by one where a test needs to know which instance does what.
 */
let cluster: Cluster;
let token: string;
const leaseMs = 3_000;
const dashboardPassword = 'correct horse battery staple';
// Small enough to reach in a test, large enough for every other test's user.
const caps = { streams: 4, sessions: 10 };

beforeAll(async () => {
  cluster = await startCluster({
    env: {
      MCP_FIXTURE_TOOLS: '1',
      TASK_LEASE_MS: String(leaseMs),
      TASK_POLL_INTERVAL_MS: '200',
      TASK_MAX_ACTIVE_PER_USER: '1000',
      MCP_MAX_STREAMS_PER_USER: String(caps.streams),
      MCP_MAX_SESSIONS_PER_USER: String(caps.sessions),
    },
  });
  token = createToken(cluster.instances[0], 'ada@example.com');
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
});

async function sessionOn(mcpUrl: string, capabilities: Record<string, unknown> = {}, as = token): Promise<RawMcp> {
  const mcp = new RawMcp(mcpUrl, as);
  await mcp.initialize(undefined, capabilities);
  return mcp;
}

/** The same session, addressed to another instance. */
function elsewhere(mcp: RawMcp, instance: TestServer): RawMcp {
  const other = new RawMcp(instance.mcpUrl, mcp.token);
  other.sessionId = mcp.sessionId;
  return other;
}

/** The session's GET stream, asked of one instance. */
function getStreamOn(mcp: RawMcp, instance: TestServer): Promise<Response> {
  const headers = mcp.headers({ Accept: 'text/event-stream' });
  delete headers['Content-Type'];
  return fetch(instance.mcpUrl, { method: 'GET', headers });
}

/** A GET stream that must open; its first event (the priming one) shows the server holds it. */
async function openGetStreamOn(mcp: RawMcp, instance: TestServer): Promise<SseReader> {
  const response = await getStreamOn(mcp, instance);
  expect(response.status).toBe(200);
  const reader = new SseReader(response);
  expect(await reader.next()).not.toBeNull();
  return reader;
}

/** A 429 that names what was exceeded and says when to retry; `id`, when given, is the refused request's (null: none). */
function expectRefusal(reply: RpcReply, reason: RegExp, id?: string | null) {
  expect(reply.status).toBe(429);
  const retryAfter = Number(reply.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
  expect(reply.body).toMatchObject({ jsonrpc: '2.0', error: { code: -31429, data: { retryAfterSeconds: retryAfter } } });
  if (id === null) expect(reply.body).not.toHaveProperty('id');
  else if (id !== undefined) expect(reply.body.id).toBe(id);
  expect(reply.body.error.message).toMatch(reason);
  expect(reply.body.error.message).toContain(`retry after ${retryAfter} seconds`);
}

const streamCap = new RegExp(`already has ${caps.streams} streams open .*MCP_MAX_STREAMS_PER_USER`);

const tokenHashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');

const taskRow = (id: string) => cluster.instances[1].db().prepare('SELECT status, status_message, runner, attempt FROM tasks WHERE id = ?').get(id) as any;

describe('several instances behind a load balancer', () => {
  it('runs the whole task flow of an SDK task client, its requests spread over every instance', async () => {
    const before = cluster.requestCounts();
    const { client, close } = await connectSdkClient(cluster.mcpUrl, token);
    try {
      const statuses: string[] = [];
      client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => void statuses.push(notification.params.status));
      let taskId = '';
      let result: any;
      const progress: number[] = [];
      for await (const message of client.experimental.tasks.callToolStream({ name: 'delay', arguments: { seconds: 1.2 } }, CallToolResultSchema, {
        task: { ttl: 60_000 },
        onprogress: (update) => progress.push(update.progress),
      })) {
        if (message.type === 'taskCreated') taskId = message.task.taskId;
        if (message.type === 'result') result = message.result;
        if (message.type === 'error') throw message.error;
      }
      expect(result.content).toEqual([{ type: 'text', text: 'Waited 1.2 s.' }]);
      // Progress comes on the GET stream, held by whichever instance the client's GET reached: the last
      // report may arrive just after the result, which another instance returned.
      await expect.poll(() => progress).toEqual([0.5, 1, 1.2]);
      await expect.poll(() => statuses).toContain('completed');
      expect(await client.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: 'completed' });
      expect((await client.experimental.tasks.listTasks()).tasks.map((task) => task.taskId)).toContain(taskId);

      // A cancel that reaches any instance stops the tool where it runs (the fixture says when its run ends).
      let running = '';
      for await (const message of client.experimental.tasks.callToolStream({ name: 'fixture_observed_delay', arguments: { seconds: 30 } }, CallToolResultSchema, { task: {} })) {
        if (message.type === 'taskCreated') {
          running = message.task.taskId;
          break;
        }
      }
      expect((await client.experimental.tasks.cancelTask(running)).status).toBe('cancelled');
      const runEnded = () => cluster.instances.map((instance) => instance.output()).join('').match(new RegExp(`"fixture":"run-ended","taskId":"${running}","ending":"(\\w+)"`))?.[1];
      await expect.poll(runEnded, { timeout: 5_000 }).toBe('AbortError');
    } finally {
      await close();
    }
    const served = cluster.requestCounts().map((count, index) => count - before[index]);
    expect(served.every((count) => count > 0)).toBe(true);
  });

  it('answers a plain-call client (SDK 2.x) and its question through the balancer', async () => {
    const { client, close } = await connectSdk2Client(cluster.mcpUrl, token, {
      elicit: async (params) => ({ action: 'accept', content: { answer: `yes to ${params.message}` } }),
    });
    try {
      const result: any = await client.callTool({ name: 'ask_human', arguments: { question: 'Across instances?' } });
      expect(result.content[0].text).toContain('yes to Across instances?');
    } finally {
      await close();
    }
  });

  it('wakes a tasks/result blocked on one instance when the task ends on another', async () => {
    const [a, b] = cluster.instances;
    const onA = await sessionOn(a.mcpUrl);
    const { task } = await onA.call('tools/call', { name: 'delay', arguments: { seconds: 1 }, task: {} });
    const reply = await elsewhere(onA, b).call('tasks/result', { taskId: task.taskId });
    const wokenAt = Date.now();
    expect(reply.content).toEqual([{ type: 'text', text: 'Waited 1 s.' }]);
    const ended = await onA.call('tasks/get', { taskId: task.taskId });
    expect(ended.status).toBe('completed');
    // Loosely: the p50 over 200 tasks is in the bench; B is not polling (its wait would take a poll interval or more).
    expect(wokenAt - Date.parse(ended.lastUpdatedAt)).toBeLessThan(1_000);
  });

  it('takes a question answered in the dashboard, through the balancer, to the tool on another instance', async () => {
    const [a] = cluster.instances;
    const onA = await sessionOn(a.mcpUrl);
    const { task } = await onA.call('tools/call', { name: 'ask_human', arguments: { question: 'Answer me in the browser?' }, task: {} });
    await expect.poll(() => taskRow(task.taskId).status).toBe('input_required');
    const input = cluster.instances[1].db().prepare("SELECT id FROM task_inputs WHERE task_id = ? AND status = 'pending'").get(task.taskId) as { id: string };
    expect(setPassword(a, 'ada@example.com', dashboardPassword).status).toBe(0);
    const balancer = { url: cluster.url } as TestServer;
    const { sessionCookie } = await signIn(balancer, 'ada@example.com', dashboardPassword);
    expect(sessionCookie).toBeDefined();
    const form = new FormData();
    form.set('_1_$action', 'accept');
    form.set('_1_answer', 'from the browser');
    form.set('0', JSON.stringify([input.id, { ok: false }, '$K1']));
    const pressed = await callServerAction(balancer, {
      page: `/tasks/${task.taskId}`,
      filename: 'app/(dashboard)/tasks/[taskId]/input-actions.ts',
      exportedName: 'answerQuestionAction',
      body: form,
      cookie: sessionCookie,
    });
    expect(pressed.status).toBe(200);
    const result = await onA.call('tasks/result', { taskId: task.taskId });
    expect(result.content[0].text).toBe('Answer (given in the dashboard): from the browser');
  });

  it('connects a client by OAuth through the balancer, each step on whichever instance it reaches', async () => {
    expect(setPassword(cluster.instances[0], 'ada@example.com', dashboardPassword).status).toBe(0);
    const redirectUri = 'http://127.0.0.1:53682/callback';
    const registered = await registerClient(cluster.url, publicClientMetadata('Balanced client', redirectUri));
    expect(registered.status).toBe(201);
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    const browser = new BrowserSession(cluster.url);
    await browser.signIn('ada@example.com', dashboardPassword);
    const pkce = pkcePair();
    const authorizeUrl = new URL('/oauth/authorize', cluster.url);
    for (const [name, value] of Object.entries({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      scope: 'mcp',
      state: 'balanced',
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
      resource: cluster.mcpUrl,
    })) {
      authorizeUrl.searchParams.set(name, value);
    }
    const landed = await browser.authorize(authorizeUrl.toString());
    expect(landed.searchParams.get('state')).toBe('balanced');
    const code = landed.searchParams.get('code')!;
    const exchanged = await tokenRequest(cluster.url, {
      grant_type: 'authorization_code',
      client_id: clientId,
      code,
      code_verifier: pkce.verifier,
      redirect_uri: redirectUri,
      resource: cluster.mcpUrl,
    });
    expect(exchanged.status).toBe(200);
    const accessToken = (exchanged.body as { access_token: string }).access_token;
    // The token works on every instance, whichever issued it.
    for (const instance of cluster.instances) {
      const mcp = new RawMcp(instance.mcpUrl, accessToken);
      await mcp.initialize();
      expect((await mcp.call('tools/list')).tools.map((tool: { name: string }) => tool.name)).toContain('delay');
    }
  });

  it('refuses a token revoked on one instance on every other at once, and ends its open stream there', async () => {
    const [a, b] = cluster.instances;
    const email = 'revoked-across@example.com';
    const revoked = createToken(a, email);
    const onB = await sessionOn(b.mcpUrl, {}, revoked);
    const stream = await openGetStreamOn(onB, b);
    // B has just read the token, and keeps it for seconds unless told the row changed.
    expect((await onB.request('ping')).status).toBe(200);

    expect(setPassword(a, email, dashboardPassword).status).toBe(0);
    const { sessionCookie } = await signIn(a, email, dashboardPassword);
    const { id: tokenId } = b.db().prepare('SELECT t.id FROM access_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = ?').get(email) as { id: string };
    const pressed = await callServerAction(a, {
      page: '/tokens',
      filename: 'app/(dashboard)/tokens/actions.ts',
      exportedName: 'revokeTokenAction',
      body: JSON.stringify([tokenId]),
      cookie: sessionCookie,
    });
    expect(pressed.status).toBe(200);

    // The stream B holds ends (B checks the tokens of its open streams), and B refuses the token from
    // then on: its cached copy went with the row's change, long before it would have lapsed.
    expect(await stream.next(10_000)).toBeNull();
    const refused = await onB.request('ping');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /);
    for (const instance of cluster.instances) expect((await elsewhere(onB, instance).request('ping')).status).toBe(401);
  });

  it('believes no notification on the shared channel, which anyone who may connect can send: a forged one only makes it read the truth', async () => {
    const [a, b] = cluster.instances;
    const onB = await sessionOn(b.mcpUrl, { elicitation: {} });
    await onB.call('logging/setLevel', { level: 'debug' });
    // A plain call, followed on B where its tool runs, waiting for its question to be answered.
    const call = new SseReader(await onB.post({ jsonrpc: '2.0', id: 'forged', method: 'tools/call', params: { name: 'ask_human', arguments: { question: 'Believe it?' } } }));
    const question = await call.nextMessageWhere((message) => message.method === 'elicitation/create');
    const task = b.db().prepare('SELECT id, user_id FROM tasks WHERE session_id = ?').get(onB.sessionId) as { id: string; user_id: string };
    const { id: tokenId } = b.db().prepare('SELECT id FROM access_tokens WHERE token_hash = ?').get(tokenHashOf(token)) as { id: string };

    const forger = new pg.Client({ connectionString: cluster.database.url });
    await forger.connect();
    try {
      const t = task.id;
      const u = task.user_id;
      for (const forged of [
        { k: 'log', t, u, l: 'emergency', d: 'a forged log message', r: 1 },
        { k: 'log', t, u, l: 'emergency', d: 'a forged log message' },
        { k: 'close', t, u, r: 1 },
        { k: 'close', t, u },
        { k: 'progress', t, u, p: 99, n: 100, m: 'forged progress' },
        { k: 'task', t, u, tr: true, status: 'completed' },
        { k: 'deleted', t, u },
        { k: 'input', i: 'no-such-input', t, u },
        { k: 'row', table: 'access_tokens', key: tokenId },
        { k: 'task', t: 42, u },
      ]) {
        await forger.query('SELECT pg_notify($1, $2)', ['mcp_task_server', JSON.stringify({ o: 'forger', ...forged })]);
      }
    } finally {
      await forger.end();
    }

    // The answer comes through A, after the forgeries: B hears of it on the same channel, in that order.
    const answered = await elsewhere(onB, a).post({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { answer: 'only the truth' } } });
    expect(answered.status).toBe(202);
    const rest = messagesOf(await call.readAll());
    // Nothing but the call's result: no forged log message, no progress, the stream not closed early.
    expect(rest).toHaveLength(1);
    expect(rest[0]).toMatchObject({ id: 'forged', result: { structuredContent: { action: 'accept', content: { answer: 'only the truth' } } } });
    expect(taskRow(task.id).status).toBe('completed');
    expect((await onB.request('ping')).status).toBe(200);
  });

  it('takes over the tasks of a killed instance: resumed or honestly failed, each once, questions kept', async () => {
    const [a] = cluster.instances;
    const onA = await sessionOn(a.mcpUrl);
    const resumable: string[] = [];
    const failing: string[] = [];
    // The tasks that must outlive the crash are started last, and long enough not to end before it
    // however slowly a loaded machine creates the others.
    for (let i = 0; i < 50; i += 1) failing.push((await onA.call('tools/call', { name: 'fixture_observed_delay', arguments: { seconds: 60 }, task: {} })).task.taskId);
    const asking = (await onA.call('tools/call', { name: 'ask_human', arguments: { question: 'Still there after the crash?' }, task: {} })).task.taskId;
    for (let i = 0; i < 50; i += 1) resumable.push((await onA.call('tools/call', { name: 'delay', arguments: { seconds: 10 }, task: {} })).task.taskId);
    await expect.poll(() => taskRow(asking).status).toBe('input_required');
    const killedRunner = taskRow(resumable[0]).runner;
    expect(resumable.every((id) => taskRow(id).status === 'working')).toBe(true);
    const killedAt = Date.now();
    await a.kill9();
    try {
      const settled = () =>
        resumable.every((id) => taskRow(id).runner !== killedRunner && taskRow(id).attempt === 2) && failing.every((id) => taskRow(id).status === 'failed');
      await expect.poll(settled, { timeout: leaseMs + 5_000, interval: 100 }).toBe(true);
      const tookMs = Date.now() - killedAt;
      for (const id of resumable) {
        const row = taskRow(id);
        expect(['working', 'completed']).toContain(row.status);
        // Resumed once, by one instance: never twice.
        expect(row.attempt).toBe(2);
      }
      for (const id of failing) {
        expect(taskRow(id)).toMatchObject({ status: 'failed', status_message: 'The server restarted before this task finished, and this tool cannot resume.' });
      }
      await expect.poll(() => resumable.every((id) => taskRow(id).status === 'completed'), { timeout: 15_000 }).toBe(true);
      const completions = cluster.instances[1].db().prepare("SELECT task_id, count(*) AS n FROM task_events WHERE to_status = 'completed' GROUP BY task_id").all() as Array<{ task_id: string; n: number }>;
      const completedOnce = new Map(completions.map((row) => [row.task_id, row.n]));
      for (const id of resumable) expect(completedOnce.get(id)).toBe(1);
      expect(tookMs).toBeLessThan(leaseMs + 5_000);

      // The open question survived: asked again on a tasks/result stream through the balancer, answered there.
      await expect.poll(() => taskRow(asking).runner).not.toBe(killedRunner);
      const viaBalancer = await sessionOn(cluster.mcpUrl, { elicitation: {} });
      const stream = new SseReader(await viaBalancer.post({ jsonrpc: '2.0', id: 'after', method: 'tasks/result', params: { taskId: asking } }));
      const question = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
      expect(question.params.message).toBe('Still there after the crash?');
      expect((await viaBalancer.post({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { answer: 'after the crash' } } })).status).toBe(202);
      const result = await stream.nextMessageWhere((message) => message.id === 'after');
      expect(result.result.content[0].text).toContain('after the crash');
    } finally {
      // The next tests need every instance.
      await a.restart();
    }
  }, 60_000);

  it('hands its tasks over at SIGTERM, and another instance resumes them within a second or so', async () => {
    const [a] = cluster.instances;
    const onA = await sessionOn(a.mcpUrl);
    const ids: string[] = [];
    for (let i = 0; i < 10; i += 1) ids.push((await onA.call('tools/call', { name: 'delay', arguments: { seconds: 20 }, task: {} })).task.taskId);
    await expect.poll(() => ids.every((id) => taskRow(id).runner !== null)).toBe(true);
    const stoppingRunner = taskRow(ids[0]).runner;
    const started = Date.now();
    const stopping = a.restart();
    await expect.poll(() => ids.every((id) => taskRow(id).runner !== stoppingRunner && taskRow(id).attempt === 2), { timeout: leaseMs, interval: 50 }).toBe(true);
    // Loosely: the figure is in the bench; well inside the lease means the handover, not the expiry, did it.
    expect(Date.now() - started).toBeLessThan(leaseMs);
    await stopping;
  });
});

describe('per-user caps and limits, held for the whole deployment', () => {
  it("counts a user's streams on every instance together against MCP_MAX_STREAMS_PER_USER", async () => {
    const [a, b, c] = cluster.instances;
    const capped = createToken(a, 'streams-across@example.com');
    const sessions: RawMcp[] = [];
    for (let i = 0; i < caps.streams + 2; i += 1) sessions.push(await sessionOn(cluster.mcpUrl, {}, capped));
    const readers: SseReader[] = [];
    const waiting = (await sessions[0].startDelayTask(3600)).taskId;
    try {
      // The cap, reached on two instances: GET streams on A and B in turn.
      for (let i = 0; i < caps.streams; i += 1) readers.push(await openGetStreamOn(sessions[i], i % 2 === 0 ? a : b));
      // C holds none of this user's streams, and refuses one more all the same; so does a request it
      // would answer with a stream.
      expectRefusal(await replyOf(await getStreamOn(sessions[caps.streams], c)), streamCap, null);
      const result = await elsewhere(sessions[0], c).post({ jsonrpc: '2.0', id: 'across', method: 'tasks/result', params: { taskId: waiting } });
      expectRefusal(await replyOf(result), streamCap, 'across');

      // A stream on A closes: its place is free, and C gives it to another stream.
      await readers[0].close();
      const reopened = await untilNotRefused(() => getStreamOn(sessions[caps.streams], c));
      expect(reopened.status).toBe(200);
      readers.push(new SseReader(reopened));
      expect(await readers.at(-1)!.next()).not.toBeNull();
      for (const instance of [a, b, c]) expectRefusal(await replyOf(await getStreamOn(sessions[caps.streams + 1], instance)), streamCap, null);

      // A stops gracefully: the place of the stream it held is given back at once, not when it lapses.
      await a.restart();
      readers.push(await openGetStreamOn(sessions[caps.streams + 1], b));
      expectRefusal(await replyOf(await getStreamOn(sessions[0], c)), streamCap, null);
    } finally {
      for (const reader of readers) await reader.close();
      await sessions[0].call('tasks/cancel', { taskId: waiting });
    }
  }, 120_000);

  it('keeps a session whose stream is open on another instance when the session cap makes room', async () => {
    const [a, b] = cluster.instances;
    const user = createToken(a, 'sessions-across@example.com');
    const sessions: RawMcp[] = [];
    for (let i = 0; i < caps.sessions; i += 1) sessions.push(await sessionOn(cluster.mcpUrl, {}, user));
    const [streaming, unused] = sessions;
    const stream = await openGetStreamOn(streaming, a);
    try {
      // Sessions record their use to the minute: make the streaming session the one unused longest, then `unused`.
      const db = cluster.instances[1].db();
      db.prepare('UPDATE mcp_sessions SET last_seen_at = last_seen_at - 120000 WHERE id = ?').run(streaming.sessionId);
      db.prepare('UPDATE mcp_sessions SET last_seen_at = last_seen_at - 60000 WHERE id = ?').run(unused.sessionId);

      // B holds no stream of this user, yet knows the session streaming on A is in use: it ends the next one.
      await sessionOn(b.mcpUrl, {}, user);
      const ended = await elsewhere(unused, b).request('ping');
      expect(ended.status).toBe(404);
      expect((await elsewhere(streaming, b).request('ping')).status).toBe(200);
      const live = db.prepare("SELECT count(*) AS n FROM mcp_sessions s JOIN users u ON u.id = s.user_id WHERE u.email = 'sessions-across@example.com' AND s.ended_at IS NULL").get() as { n: number };
      expect(Number(live.n)).toBe(caps.sessions);
    } finally {
      await stream.close();
    }
  });

  it('holds the per-minute request limit for the deployment, whichever instance a request reaches', async () => {
    const limit = 30;
    const limited = await startCluster({ instances: 3, env: { RATE_LIMIT_PER_TOKEN: String(limit) } });
    try {
      const mcp = new RawMcp(limited.mcpUrl, createToken(limited.instances[0], 'requests-across@example.com'));
      // The pings each instance logged, and those it refused (only this test sends pings to this cluster).
      const pings = (refusedOnly: boolean) =>
        limited.instances.map(
          (instance) => instance.output().split('\n').filter((line) => line.includes('"method":"ping"') && (!refusedOnly || line.includes('"status":429'))).length,
        );
      const total = (counts: number[]) => counts.reduce((sum, count) => sum + count, 0);
      // initialize and notifications/initialized count as two.
      await mcp.initialize();
      let admitted = 2;
      let refused: RpcReply | undefined;
      while (!refused && admitted <= limit) {
        const reply = await mcp.request('ping');
        if (reply.status === 429) refused = reply;
        else admitted += 1;
      }
      expect(admitted).toBe(limit);
      expectRefusal(refused!, /this access token sent too many requests/);
      // Round robin: each instance saw about a third of them, far from the limit alone.
      await expect.poll(() => total(pings(false))).toBe(limit - 2 + 1);
      for (const count of pings(false)) expect(count, limited.proxyLog()).toBeLessThan(limit / 2);

      // The requests that follow are refused whichever instance they reach.
      for (let i = 0; i < 6; i += 1) expect((await mcp.request('ping')).status).toBe(429);
      await expect.poll(() => total(pings(true))).toBe(7);
      expect(pings(true).every((count) => count > 0), limited.proxyLog()).toBe(true);
    } finally {
      await limited.stop();
    }
  }, 240_000);
});
