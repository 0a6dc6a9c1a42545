import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callAndDrop, messagesOf, RawMcp, SseReader } from '../helpers/mcp';
import { createToken, startServer, type TestServer } from '../helpers/server';

/** Short, so that messages age out and heartbeats come within a test; every check is relative to them. */
const retentionMs = 1000;
const heartbeatMs = 300;

let server: TestServer;
let token: string;

beforeAll(async () => {
  server = await startServer({
    SESSION_MESSAGE_RETENTION_MS: String(retentionMs),
    TASK_SWEEP_INTERVAL_MS: '200',
    CALL_HEARTBEAT_MS: String(heartbeatMs),
  });
  token = createToken(server, 'ada@example.com');
});

afterAll(async () => {
  await server?.stop();
});

async function rawSession(capabilities: Record<string, unknown> = {}): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize('2025-11-25', capabilities);
  return mcp;
}

/** A GET with Last-Event-ID, whatever its status. */
function getWithLastEventId(mcp: RawMcp, lastEventId: string): Promise<Response> {
  const headers = mcp.headers({ Accept: 'text/event-stream', 'Last-Event-ID': lastEventId });
  delete headers['Content-Type'];
  return fetch(server.mcpUrl, { method: 'GET', headers });
}

const storedMessageCount = (sessionId: string) =>
  (server.db().prepare('SELECT count(*) AS n FROM session_messages WHERE session_id = ?').get(sessionId) as { n: number }).n;

describe('Last-Event-ID', () => {
  it('resumes a call that waits longer than messages are kept, and never the GET stream in its place', async () => {
    const mcp = await rawSession();
    const getStream = await mcp.openGetStream();
    const getPriming = await getStream.next();
    const primingId = await callAndDrop(mcp, 'long', 'tools/call', { name: 'delay', arguments: { seconds: 4 } });
    // The GET stream's priming row ages out; the waiting call's rows must not.
    await expect.poll(() => server.db().prepare('SELECT count(*) AS n FROM session_messages WHERE session_id = ? AND stream IS NULL').get(mcp.sessionId), { timeout: 10_000 }).toEqual({ n: 0 });
    const resumed = await mcp.openGetStream(primingId);
    const messages = messagesOf(await resumed.readAll());
    expect(messages.at(-1)).toMatchObject({ id: 'long', result: { content: [{ type: 'text', text: 'Waited 4 s.' }] } });
    // The live GET stream was not replaced by the resumed call.
    const taskId = (await mcp.startDelayTask(0)).taskId;
    const status = await getStream.nextMessageWhere((message) => message.method === 'notifications/tasks/status' && message.params.taskId === taskId);
    expect(status.params.taskId).toBe(taskId);
    expect(getPriming?.id).toMatch(/^get:\d+$/);
    await getStream.close();
  });

  it('answers an id whose stream is gone, unknown or malformed with 400, and keeps the GET stream open', async () => {
    const mcp = await rawSession();
    const getStream = await mcp.openGetStream();
    await getStream.next();
    const response = await mcp.post({ jsonrpc: '2.0', id: 'short', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 0.1 } } });
    const ended = (await new SseReader(response).readAll())[0].id!;
    // An ended stream's rows age out like any others.
    await expect.poll(() => storedMessageCount(mcp.sessionId!), { timeout: 10_000 }).toBe(0);
    for (const lastEventId of [ended, `post:${crypto.randomUUID()}:1`, 'nonsense', '12']) {
      const refused = await getWithLastEventId(mcp, lastEventId);
      expect(refused.status).toBe(400);
      expect((await refused.json()).error.message).toMatch(/Last-Event-ID/);
    }
    const taskId = (await mcp.startDelayTask(0)).taskId;
    const status = await getStream.nextMessageWhere((message) => message.method === 'notifications/tasks/status' && message.params.taskId === taskId);
    expect(status.params.taskId).toBe(taskId);
    await getStream.close();
  });

  it("resumes the GET stream from an id of it whose messages are gone, and refuses another session's stream", async () => {
    const mcp = await rawSession();
    const first = await mcp.openGetStream();
    const priming = await first.next();
    await first.close();
    await expect.poll(() => storedMessageCount(mcp.sessionId!), { timeout: 10_000 }).toBe(0);
    const resumed = await mcp.openGetStream(priming!.id!);
    const taskId = (await mcp.startDelayTask(0)).taskId;
    expect((await resumed.nextMessageWhere((message) => message.params?.taskId === taskId)).method).toBe('notifications/tasks/status');
    await resumed.close();

    const other = await rawSession();
    const primingId = await callAndDrop(mcp, 'mine', 'tools/call', { name: 'delay', arguments: { seconds: 1 } });
    expect((await getWithLastEventId(other, primingId)).status).toBe(400);
  });
});

describe('after a restart', () => {
  it('continues the progress of a resumed call from the last value sent on its stream', async () => {
    const mcp = await rawSession();
    const controller = new AbortController();
    const response = await mcp.post(
      { jsonrpc: '2.0', id: 'beats', method: 'tools/call', params: { name: 'ask_human', arguments: { question: 'Still there?' }, _meta: { progressToken: 'hb' } } },
      {},
      controller.signal,
    );
    const reader = new SseReader(response);
    const priming = await reader.next();
    for (let beats = 0; beats < 3; ) if ((await reader.nextMessage())?.method === 'notifications/progress') beats += 1;
    controller.abort();
    await server.restart();

    const resumed = await mcp.openGetStream(priming!.id!);
    const progress: number[] = [];
    let afterRestart = 0;
    while (afterRestart < 3) {
      const message = await resumed.nextMessage();
      if (message?.method !== 'notifications/progress') continue;
      progress.push(message.params.progress);
      if (progress.length > 3) afterRestart += 1;
    }
    for (let i = 1; i < progress.length; i += 1) expect(progress[i]).toBeGreaterThan(progress[i - 1]);
    await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'beats' } });
    await resumed.close();
  });

  it('answers a resumed tasks/result stream when the task ends', async () => {
    const mcp = await rawSession();
    const task = await mcp.startDelayTask(3);
    const primingId = await callAndDrop(mcp, 'result-after-restart', 'tasks/result', { taskId: task.taskId });
    await server.restart();
    const messages = messagesOf(await (await mcp.openGetStream(primingId)).readAll(20_000));
    expect(messages.at(-1)).toMatchObject({ id: 'result-after-restart', result: { content: [{ type: 'text', text: 'Waited 3 s.' }] } });
  });
});

const answer = (mcp: RawMcp, id: string, result: Record<string, unknown>) => mcp.post({ jsonrpc: '2.0', id, result });
const refuse = (mcp: RawMcp, id: string, message: string) => mcp.post({ jsonrpc: '2.0', id, error: { code: -32603, message } });
const answerText = (text: string) => ({ content: expect.arrayContaining([{ type: 'text', text: `Answer (given in the MCP client): ${text}` }]) });

async function startAskHuman(mcp: RawMcp, question: string): Promise<string> {
  const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question }, task: {} });
  return task.taskId;
}

async function resultStream(mcp: RawMcp, id: string, taskId: string): Promise<SseReader> {
  return new SseReader(await mcp.post({ jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } }));
}

/** The task a client says it made of our question: working, polled every 250 ms. */
function workingClientTask(taskId: string) {
  const now = new Date().toISOString();
  return { taskId, status: 'working', createdAt: now, lastUpdatedAt: now, ttl: 60_000, pollInterval: 250 };
}

describe('questions to clients', () => {
  it('follows up a client task on the stream its question went on, and asks again when that task cannot be followed', async () => {
    const mcp = await rawSession({ elicitation: {}, tasks: { requests: { elicitation: { create: {} } } } });
    const taskId = await startAskHuman(mcp, 'Yours to track?');
    const reader = await resultStream(mcp, 'waiting', taskId);
    const question = await reader.nextMessageWhere((message) => message.method === 'elicitation/create');
    const clientTask = workingClientTask('client-task-1');
    expect((await answer(mcp, question.id, { task: clientTask })).status).toBe(202);
    // No GET stream is open: the follow-ups come on the tasks/result stream the client reads.
    for (let failures = 0; failures < 5; failures += 1) {
      const poll = await reader.nextMessageWhere((message) => message.method === 'tasks/get');
      expect(poll.params).toEqual({ taskId: 'client-task-1' });
      expect((await refuse(mcp, poll.id, 'no such task')).status).toBe(202);
    }
    const again = await reader.nextMessageWhere((message) => message.method === 'elicitation/create');
    expect(again.id).not.toBe(question.id);
    expect(again.params.message).toBe('Yours to track?');
    expect((await answer(mcp, again.id, { action: 'accept', content: { answer: 'asked again' } })).status).toBe(202);
    expect(await reader.nextMessageWhere((message) => message.id === 'waiting')).toMatchObject({ result: answerText('asked again') });
  });

  it("cancels a client's task on the stream it was followed on when the server's task is cancelled", async () => {
    const mcp = await rawSession({ elicitation: {}, tasks: { cancel: {}, requests: { elicitation: { create: {} } } } });
    const taskId = await startAskHuman(mcp, 'Cancelled under you?');
    const reader = await resultStream(mcp, 'waiting', taskId);
    const question = await reader.nextMessageWhere((message) => message.method === 'elicitation/create');
    const clientTask = workingClientTask('client-task-3');
    expect((await answer(mcp, question.id, { task: clientTask })).status).toBe(202);
    const poll = await reader.nextMessageWhere((message) => message.method === 'tasks/get');
    expect((await answer(mcp, poll.id, clientTask)).status).toBe(202);
    await mcp.call('tasks/cancel', { taskId });
    const cancel = await reader.nextMessageWhere((message) => message.method === 'tasks/cancel');
    expect(cancel.params).toEqual({ taskId: 'client-task-3' });
  });

  it('offers a question on a waiting tasks/result stream once the GET stream that carried it closes', async () => {
    const mcp = await rawSession({ elicitation: {} });
    const getStream = await mcp.openGetStream();
    await getStream.next();
    const taskId = await startAskHuman(mcp, 'Still pinned?');
    const onGet = await getStream.nextMessageWhere((message) => message.method === 'elicitation/create');
    const reader = await resultStream(mcp, 'waiting', taskId);
    await reader.next();
    await getStream.close();
    const offered = await reader.nextMessageWhere((message) => message.method === 'elicitation/create');
    expect(offered.id).not.toBe(onGet.id);
    expect((await answer(mcp, offered.id, { action: 'accept', content: { answer: 'moved' } })).status).toBe(202);
    expect(await reader.nextMessageWhere((message) => message.id === 'waiting')).toMatchObject({ result: answerText('moved') });
  });

  it('withdraws only the copies the client has not responded to', async () => {
    const mcp = await rawSession({ elicitation: {} });
    const getStream = await mcp.openGetStream();
    await getStream.next();
    const taskId = await startAskHuman(mcp, 'Who answers?');
    const onGet = await getStream.nextMessageWhere((message) => message.method === 'elicitation/create');
    // The person closed the client's dialog: an error, and the question stays open for others.
    expect((await refuse(mcp, onGet.id, 'dialog closed')).status).toBe(202);
    const other = await rawSession({ elicitation: {} });
    const reader = await resultStream(other, 'other', taskId);
    const copy = await reader.nextMessageWhere((message) => message.method === 'elicitation/create');
    expect((await answer(other, copy.id, { action: 'accept', content: { answer: 'elsewhere' } })).status).toBe(202);
    expect(await reader.nextMessageWhere((message) => message.id === 'other')).toMatchObject({ result: answerText('elsewhere') });
    const seen: Array<Record<string, any>> = [];
    await getStream.nextMessageWhere((message) => {
      seen.push(message);
      return message.method === 'notifications/tasks/status' && message.params.status === 'completed';
    });
    expect(seen.filter((message) => message.method === 'notifications/cancelled')).toEqual([]);
    await getStream.close();
  });
});

describe('a client task across a restart', () => {
  it('is followed again on the tasks/result stream it was followed on', async () => {
    const mcp = await rawSession({ elicitation: {}, tasks: { requests: { elicitation: { create: {} } } } });
    const taskId = await startAskHuman(mcp, 'Across a restart?');
    const controller = new AbortController();
    const reader = new SseReader(await mcp.post({ jsonrpc: '2.0', id: 'across', method: 'tasks/result', params: { taskId } }, {}, controller.signal));
    const question = await reader.nextMessageWhere((message) => message.method === 'elicitation/create');
    const clientTask = workingClientTask('client-task-2');
    expect((await answer(mcp, question.id, { task: clientTask })).status).toBe(202);
    const poll = await reader.nextMessageWhere((message) => message.method === 'tasks/get');
    expect((await answer(mcp, poll.id, clientTask)).status).toBe(202);
    controller.abort();
    await server.restart();

    const resumed = await mcp.openGetStream(poll.__eventId);
    // A poll sent just before the restart waits for nobody now: every poll is answered until the fetch.
    let fetched;
    do {
      fetched = await resumed.nextMessageWhere((message) => message.method === 'tasks/get' || message.method === 'tasks/result', 20_000);
      expect(fetched.params).toEqual({ taskId: 'client-task-2' });
      if (fetched.method === 'tasks/get') expect((await answer(mcp, fetched.id, { ...clientTask, status: 'completed' })).status).toBe(202);
    } while (fetched.method === 'tasks/get');
    expect((await answer(mcp, fetched.id, { action: 'accept', content: { answer: 'after the restart' } })).status).toBe(202);
    expect(await resumed.nextMessageWhere((message) => message.id === 'across')).toMatchObject({ result: answerText('after the restart') });
  });
});
