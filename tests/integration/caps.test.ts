import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { setPassword, signIn } from '../helpers/dashboard';
import { RawMcp, replyOf, SseReader, untilNotRefused, type RpcReply } from '../helpers/mcp';
import { ModernMcp, tasksExtension } from '../helpers/modern';
import { createToken, startServer, type TestServer } from '../helpers/server';

// A sign-in hashes with scrypt at 128 MiB, and the CLIs start their own Node: slow on a busy machine.
vi.setConfig({ testTimeout: 120_000 });

const caps = { sessions: 3, streams: 4, dashboardStreams: 2 };
let server: TestServer;

beforeAll(async () => {
  server = await startServer({
    MCP_MAX_SESSIONS_PER_USER: String(caps.sessions),
    MCP_MAX_STREAMS_PER_USER: String(caps.streams),
    DASHBOARD_MAX_STREAMS_PER_USER: String(caps.dashboardStreams),
    // A 2026-07-28 call waits for its task this long before it answers: longer than any test here.
    MCP_ROUND_WAIT_MS: '120000',
  });
});

afterAll(async () => {
  await server?.stop();
});

/** Streams this test opened, dropped at the end so that no reader outlives its test. */
const readers: SseReader[] = [];
const keep = (reader: SseReader) => (readers.push(reader), reader);
afterAll(async () => {
  for (const reader of readers) await reader.close();
});

async function session(token: string): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  return mcp;
}

function getStream(mcp: RawMcp): Promise<Response> {
  const headers = mcp.headers({ Accept: 'text/event-stream' });
  delete headers['Content-Type'];
  return fetch(mcp.mcpUrl, { method: 'GET', headers });
}

/** A GET stream that must open; its first event (the priming one) shows the server holds it. */
async function openGetStream(mcp: RawMcp): Promise<SseReader> {
  const reader = keep(await mcp.openGetStream());
  expect(await reader.next()).not.toBeNull();
  return reader;
}

/** tasks/result of a task still working, answered on a stream that stays open. */
async function openResultStream(mcp: RawMcp, taskId: string, id: number): Promise<SseReader> {
  const response = await mcp.post({ jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = keep(new SseReader(response));
  expect(await reader.next()).not.toBeNull();
  return reader;
}

function expectCapRefusal(reply: RpcReply, id: string | number | null, reason: RegExp) {
  expect(reply.status).toBe(429);
  const retryAfter = Number(reply.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
  expect(reply.body).toMatchObject({ jsonrpc: '2.0', error: { code: -31429, data: { retryAfterSeconds: retryAfter } } });
  if (id === null) expect(reply.body).not.toHaveProperty('id');
  else expect(reply.body.id).toBe(id);
  expect(reply.body.error.message).toMatch(reason);
  expect(reply.body.error.message).toContain(`retry after ${retryAfter} seconds`);
}

async function untilCompleted(mcp: RawMcp, taskId: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await mcp.call('tasks/get', { taskId })).status !== 'completed') {
    if (Date.now() > deadline) throw new Error(`task ${taskId} did not complete in time`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const streamCap = new RegExp(`already has ${caps.streams} streams open .*MCP_MAX_STREAMS_PER_USER`);

describe('the cap on /mcp streams per user', () => {
  let token: string;
  let first: RawMcp;
  let second: RawMcp;
  let third: RawMcp;
  let waitingTask: string;
  let finishedTask: string;
  let resultStreams: SseReader[];
  let firstGet: SseReader;

  beforeAll(async () => {
    token = createToken(server, 'streams@example.com');
    first = await session(token);
    second = await session(token);
    third = await session(token);
    waitingTask = (await first.startDelayTask(3600)).taskId;
    finishedTask = (await first.startDelayTask(0)).taskId;
    const secondWaiting = (await first.startDelayTask(3600)).taskId;
    await untilCompleted(first, finishedTask);
    // Four streams: two GET streams and two tasks/result streams.
    firstGet = await openGetStream(first);
    await openGetStream(second);
    resultStreams = [await openResultStream(first, waitingTask, 900), await openResultStream(first, secondWaiting, 901)];
  });

  it('refuses a GET stream past the cap with 429, Retry-After and the cap named', async () => {
    expectCapRefusal(await replyOf(await getStream(third)), null, streamCap);
  });

  it('refuses a request that would answer with a stream up front, with its id', async () => {
    const plainCall = await first.post({ jsonrpc: '2.0', id: 'plain-call', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 3600 } } });
    expectCapRefusal(await replyOf(plainCall), 'plain-call', streamCap);
    const result = await first.post({ jsonrpc: '2.0', id: 77, method: 'tasks/result', params: { taskId: waitingTask } });
    expectCapRefusal(await replyOf(result), 77, streamCap);
    // The refused plain call started nothing.
    const tasks = server.db().prepare("SELECT count(*) AS n FROM tasks t JOIN users u ON u.id = t.user_id WHERE u.email = 'streams@example.com'").get() as { n: number };
    expect(tasks.n).toBe(3);
  });

  it('still answers requests whose answer is plain JSON', async () => {
    expect((await first.request('ping')).status).toBe(200);
    expect((await first.call('tasks/get', { taskId: waitingTask })).status).toBe('working');
    const finished = await first.request('tasks/result', { taskId: finishedTask });
    expect(finished.status).toBe(200);
    expect(finished.headers.get('content-type')).toMatch(/^application\/json/);
    expect(finished.body.result.content).toEqual(expect.any(Array));
    const echo = await first.request('tools/call', { name: 'echo', arguments: { text: 'still here' } });
    expect(echo.status).toBe(200);
    expect(echo.body.result.content[0].text).toBe('still here');
    expect((await first.call('tools/call', { name: 'delay', arguments: { seconds: 3600 }, task: {} })).task.status).toBe('working');
    // Unknown task ids and malformed params get their own JSON errors, not the cap's.
    const unknown = await first.request('tasks/result', { taskId: 'no-such-task' });
    expect(unknown.status).toBe(200);
    expect(unknown.body.error.code).toBe(-32602);
    const malformed = await first.request('tasks/result', { taskId: 42 });
    expect(malformed.body.error.code).toBe(-32602);
  });

  it('lets a reconnecting GET stream replace its own older one at the cap', async () => {
    const replaced = await first.openGetStream();
    expect(await replaced.next()).not.toBeNull();
    // The older stream ends: the server closed it, so the reader sees the end.
    for (let event = await firstGet.next(); event; event = await firstGet.next());
    firstGet = keep(replaced);
    expectCapRefusal(await replyOf(await getStream(third)), null, streamCap);
  });

  it('leaves other users alone', async () => {
    const other = await session(createToken(server, 'unaffected@example.com'));
    await openGetStream(other);
    const task = (await other.startDelayTask(3600)).taskId;
    await openResultStream(other, task, 5);
  });

  it('frees a place when a stream ends from either side', async () => {
    // The task ends: its tasks/result stream ends with the result.
    await first.call('tasks/cancel', { taskId: waitingTask });
    const last = await resultStreams[0].nextMessageWhere((message) => message.id === 900);
    expect(last.result ?? last.error).toBeDefined();
    const reopened = await untilNotRefused(() => getStream(third));
    expect(reopened.status).toBe(200);
    const thirdGet = keep(new SseReader(reopened));
    const refused = await first.post({ jsonrpc: '2.0', id: 'at-cap', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 0 } } });
    expectCapRefusal(await replyOf(refused), 'at-cap', streamCap);
    // The client drops its stream.
    await thirdGet.close();
    const plainCall = await untilNotRefused(() =>
      first.post({ jsonrpc: '2.0', id: 'after-drop', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 0 } } }),
    );
    expect(plainCall.status).toBe(200);
    const reader = keep(new SseReader(plainCall));
    expect((await reader.nextMessageWhere((message) => message.id === 'after-drop')).result).toBeDefined();

    // The client drops a streamed response (its task goes on): that place is free too.
    const refill = await untilNotRefused(() => getStream(third));
    expect(refill.status).toBe(200);
    keep(new SseReader(refill));
    const full = await first.post({ jsonrpc: '2.0', id: 'full', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 0 } } });
    expectCapRefusal(await replyOf(full), 'full', streamCap);
    await resultStreams[1].close();
    const afterResponseDrop = await untilNotRefused(() =>
      first.post({ jsonrpc: '2.0', id: 'after-response-drop', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 0 } } }),
    );
    expect(afterResponseDrop.status).toBe(200);
    const lastReader = keep(new SseReader(afterResponseDrop));
    expect((await lastReader.nextMessageWhere((message) => message.id === 'after-response-drop')).result).toBeDefined();
  });
});

describe('the cap on /mcp streams per user, in 2026-07-28', () => {
  it('counts subscriptions and calls that wait for their task, refusing past the cap up front, before any task starts', async () => {
    const email = 'modern-streams@example.com';
    const token = createToken(server, email);
    const withTasks = new ModernMcp(server.mcpUrl, token, { extensions: { [tasksExtension]: {} } });
    const plain = new ModernMcp(server.mcpUrl, token, {});
    const tasksOfUser = () =>
      (server.db().prepare('SELECT count(*) AS n FROM tasks t JOIN users u ON u.id = t.user_id WHERE u.email = ?').get(email) as { n: number }).n;
    const listen = (signal?: AbortSignal) => {
      const { body, headers } = withTasks.build('subscriptions/listen', { notifications: {} });
      return withTasks.post(body, headers, signal);
    };
    const closing = new AbortController();
    for (let open = 0; open < caps.streams - 1; open += 1) {
      const subscription = keep(new SseReader(await listen(closing.signal)));
      expect((await subscription.nextMessage())!.method).toBe('notifications/subscriptions/acknowledged');
    }
    // A plain call of a task tool: a long poll, answered as JSON once its task ends or its round is over.
    const waitingCall = plain.build('tools/call', { name: 'delay', arguments: { seconds: 3600 } });
    const stopWaiting = new AbortController();
    const waiting = plain.post(waitingCall.body, waitingCall.headers, stopWaiting.signal).catch(() => undefined);
    await expect.poll(tasksOfUser).toBe(1);

    const refusedListen = withTasks.build('subscriptions/listen', { notifications: {} });
    expectCapRefusal(await replyOf(await withTasks.post(refusedListen.body, refusedListen.headers)), refusedListen.id, streamCap);
    const refusedCall = plain.build('tools/call', { name: 'delay', arguments: { seconds: 3600 } });
    expectCapRefusal(await replyOf(await plain.post(refusedCall.body, refusedCall.headers)), refusedCall.id, streamCap);
    expect(tasksOfUser()).toBe(1);
    // What is answered at once goes through: a quick tool, and the task a client of the extension is handed.
    expect((await plain.call('tools/call', { name: 'echo', arguments: { text: 'at the cap' } })).content[0].text).toBe('at the cap');
    const handedOut = await withTasks.call('tools/call', { name: 'delay', arguments: { seconds: 3600 } });
    expect(handedOut.resultType).toBe('task');
    await withTasks.call('tasks/cancel', { taskId: handedOut.taskId });

    // The waiting call's client closes it: its place is free again.
    stopWaiting.abort();
    await waiting;
    const reopened = await untilNotRefused(() => listen(closing.signal));
    expect(reopened.status).toBe(200);
    keep(new SseReader(reopened));
    closing.abort();
  });
});

const sessionCap = new RegExp(`already has ${caps.sessions} sessions, the most MCP_MAX_SESSIONS_PER_USER allows, and each has a stream open`);

describe('the cap on /mcp sessions per user', () => {
  it('ends the least recently used session without a stream to make room, and refuses when every one has a stream', async () => {
    const token = createToken(server, 'sessions@example.com');
    const oldest = await session(token);
    const idle = await session(token);
    const streaming = await session(token);
    await openGetStream(streaming);
    // Sessions record their use to the minute: make `idle` the one unused longest, though not the oldest.
    server.db().prepare('UPDATE mcp_sessions SET last_seen_at = last_seen_at - 120000 WHERE id = ?').run(idle.sessionId);

    const newest = await session(token);
    const evicted = await idle.request('ping');
    expect(evicted.status).toBe(404);
    expect(evicted.body.error.message).toMatch(/Session not found/);
    for (const alive of [oldest, streaming, newest]) expect((await alive.request('ping')).status).toBe(200);

    // Now every session at the cap has a stream open: initialize is refused and nothing ends.
    const oldestGet = await openGetStream(oldest);
    await openGetStream(newest);
    const refused = await new RawMcp(server.mcpUrl, token).post({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-test', version: '1.0.0' } },
    });
    expect(refused.headers.get('mcp-session-id')).toBeNull();
    expectCapRefusal(await replyOf(refused), 'init', sessionCap);
    for (const alive of [oldest, streaming, newest]) expect((await alive.request('ping')).status).toBe(200);
    const live = server.db().prepare("SELECT count(*) AS n FROM mcp_sessions s JOIN users u ON u.id = s.user_id WHERE u.email = 'sessions@example.com' AND s.ended_at IS NULL").get() as { n: number };
    expect(live.n).toBe(caps.sessions);

    // Another user's sessions are theirs alone.
    await session(createToken(server, 'other-sessions@example.com'));

    // Once a stream closes, its session is the one that makes room.
    await oldestGet.close();
    const admitted = await untilNotRefused(() => new RawMcp(server.mcpUrl, token).post({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-test', version: '1.0.0' } },
    }));
    expect(admitted.status).toBe(200);
    expect(admitted.headers.get('mcp-session-id')).toBeTruthy();
    expect((await oldest.request('ping')).status).toBe(404);
    for (const alive of [streaming, newest]) expect((await alive.request('ping')).status).toBe(200);
  });
});

describe('the cap on dashboard event streams per user', () => {
  it('refuses a live view past the cap with 429, Retry-After and the cap named, and frees it when one closes', async () => {
    const email = 'dashboard-streams@example.com';
    const token = createToken(server, email);
    expect(setPassword(server, email, 'a long enough password').status).toBe(0);
    const { sessionCookie } = await signIn(server, email, 'a long enough password');
    expect(sessionCookie).toBeDefined();
    const events = () => fetch(`${server.url}/api/tasks/events`, { headers: { Cookie: sessionCookie! } });

    const views: SseReader[] = [];
    for (let open = 0; open < caps.dashboardStreams; open += 1) {
      const response = await events();
      expect(response.status).toBe(200);
      views.push(keep(new SseReader(response)));
      expect(JSON.parse((await views[open].next())!.data)).toEqual({ type: 'ready' });
    }
    const refused = await events();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as { error: string };
    expect(body.error).toMatch(new RegExp(`${caps.dashboardStreams} are open for this account, the most DASHBOARD_MAX_STREAMS_PER_USER allows`));

    // The dashboard's cap and /mcp's are counted apart.
    await openGetStream(await session(token));

    await views[0].close();
    const reopened = await untilNotRefused(events);
    expect(reopened.status).toBe(200);
    expect(JSON.parse((await keep(new SseReader(reopened)).next())!.data)).toEqual({ type: 'ready' });
  });
});
