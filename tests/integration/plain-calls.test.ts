import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callAndDrop, connectSdk2Client, messagesOf, RawMcp, SseReader } from '../helpers/mcp';
import { createToken, startServer, type TestServer } from '../helpers/server';

/** Short, so that heartbeats can be watched without waiting 15 s; the checks are relative to it. */
const heartbeatMs = 1000;

let server: TestServer;
let token: string;

beforeAll(async () => {
  server = await startServer({ CALL_HEARTBEAT_MS: String(heartbeatMs), TASK_MAX_ACTIVE_PER_USER: '3' });
  token = createToken(server, 'ada@example.com');
});

afterAll(async () => {
  await server?.stop();
});

const connectSdk2 = (options: Parameters<typeof connectSdk2Client>[2] = {}) => connectSdk2Client(server.mcpUrl, token, options);

async function rawSession(as = token, capabilities: Record<string, unknown> = {}): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, as);
  await mcp.initialize('2025-11-25', capabilities);
  return mcp;
}

const taskRow = (taskId: string) =>
  server.db().prepare('SELECT status, invocation, client_name, call_request_id, progress, result FROM tasks WHERE id = ?').get(taskId) as
    | { status: string; invocation: string; client_name: string | null; call_request_id: string | null; progress: number | null; result: string | null }
    | undefined;

const latestTaskOfSession = (sessionId: string) =>
  (server.db().prepare('SELECT id FROM tasks WHERE session_id = ? ORDER BY created_at DESC LIMIT 1').get(sessionId) as { id: string } | undefined)?.id;

const latestTaskOfClient = (clientName: string, toolName: string) =>
  (server.db().prepare('SELECT id FROM tasks WHERE client_name = ? AND tool_name = ? ORDER BY created_at DESC LIMIT 1').get(clientName, toolName) as { id: string } | undefined)?.id;

async function waitForTaskStatus(taskId: string, status: string) {
  await expect.poll(() => taskRow(taskId)?.status, { timeout: 20_000 }).toBe(status);
}

function resume(mcp: RawMcp, lastEventId: string): Promise<SseReader> {
  return mcp.openGetStream(lastEventId);
}

describe('a client without task support (SDK 2.x)', () => {
  it('gets ask_human answered by its own elicitation handler, as a task the dashboard shows', async () => {
    const asked: any[] = [];
    const sdk = await connectSdk2({
      elicit: async (params) => {
        asked.push(params);
        return { action: 'accept', content: { answer: 'blue' } };
      },
    });
    try {
      const tools = await sdk.client.listTools();
      expect(tools.tools.find((tool) => tool.name === 'ask_human')?.execution).toEqual({ taskSupport: 'optional' });
      const result = await sdk.client.callTool({ name: 'ask_human', arguments: { question: 'Favourite colour?', choices: ['red', 'blue'] } });
      expect(result.isError).toBeFalsy();
      expect(result.content[0]).toEqual({ type: 'text', text: 'Answer (given in the MCP client): blue' });
      expect(result.structuredContent).toEqual({ action: 'accept', answeredBy: 'client', content: { answer: 'blue' } });
      expect(asked).toHaveLength(1);
      expect(asked[0].message).toBe('Favourite colour?');
      // The client knows no task: neither its question nor its result names one.
      expect(asked[0]._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
      expect(result._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
      const taskId = latestTaskOfClient('sdk2-client', 'ask_human')!;
      expect(taskRow(taskId)).toMatchObject({ status: 'completed', invocation: 'call', client_name: 'sdk2-client' });
      // Exactly what tasks/result would return for the task.
      expect(JSON.parse(taskRow(taskId)!.result!)).toEqual({ content: result.content, structuredContent: result.structuredContent });
    } finally {
      await sdk.close();
    }
  });

  it('keeps a long call alive with progress heartbeats, so a timeout that resets on progress never fires', async () => {
    const progress: Array<{ progress: number; at: number }> = [];
    const sdk = await connectSdk2({
      elicit: async () => {
        // The person takes a while: several heartbeat intervals.
        await new Promise((resolve) => setTimeout(resolve, heartbeatMs * 4));
        return { action: 'accept', content: { answer: 'in my own time' } };
      },
    });
    try {
      const result = await sdk.client.callTool(
        { name: 'ask_human', arguments: { question: 'Slow answer?' } },
        { timeout: heartbeatMs * 3, resetTimeoutOnProgress: true, onprogress: (update) => progress.push({ progress: update.progress, at: Date.now() }) },
      );
      expect(result.content[0]).toEqual({ type: 'text', text: 'Answer (given in the MCP client): in my own time' });
      expect(progress.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < progress.length; i += 1) expect(progress[i].progress).toBeGreaterThan(progress[i - 1].progress);
    } finally {
      await sdk.close();
    }
  });
});

describe('a plain call of a task-capable tool', () => {
  it('streams progress and ends with the result; every event has an id unique in the session', async () => {
    const mcp = await rawSession();
    const response = await mcp.post({ jsonrpc: '2.0', id: 'plain-delay', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 1.2 }, _meta: { progressToken: 'p1' } } });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await new SseReader(response).readAll();
    // A priming event (an id, no data) comes first, so the client can resume from the very start.
    expect(events[0]).toEqual({ id: expect.stringMatching(/^call:[0-9a-f-]{36}:\d+$/), data: '' });
    expect(events.every((event) => event.id !== undefined)).toBe(true);
    // An id names its stream, then its place in the session's outbox.
    const ids = events.map((event) => Number(event.id!.split(':').at(-1)));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    const messages = messagesOf(events);
    expect(messages.filter((message) => message.method === 'notifications/progress').map((message) => message.params.progress)).toEqual([0.5, 1, 1.2]);
    const final = messages.at(-1);
    expect(final.id).toBe('plain-delay');
    expect(final.result.content).toEqual([{ type: 'text', text: 'Waited 1.2 s.' }]);
    const taskId = latestTaskOfSession(mcp.sessionId!)!;
    expect(taskRow(taskId)).toMatchObject({ status: 'completed', invocation: 'call', client_name: 'raw-test', call_request_id: '"plain-delay"' });
    // The client knows no task: no task status notifications reach its session.
    const statusNotes = server
      .db()
      .prepare("SELECT COUNT(*) AS n FROM session_messages WHERE session_id = ? AND json_extract(message, '$.method') = 'notifications/tasks/status'")
      .get(mcp.sessionId) as { n: number };
    expect(statusNotes.n).toBe(0);
  });

  it('runs on when the client disconnects, and a stream resumed with Last-Event-ID delivers the result', async () => {
    const mcp = await rawSession();
    const controller = new AbortController();
    const response = await mcp.post(
      { jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'delay', arguments: { seconds: 3 }, _meta: { progressToken: 'drop' } } },
      {},
      controller.signal,
    );
    const reader = new SseReader(response);
    const priming = await reader.next();
    const firstProgress = await reader.nextMessage();
    expect(firstProgress?.method).toBe('notifications/progress');
    controller.abort();
    const taskId = latestTaskOfSession(mcp.sessionId!)!;
    expect(taskRow(taskId)?.status).toBe('working');
    await waitForTaskStatus(taskId, 'completed');

    const resumed = await resume(mcp, firstProgress!.__eventId);
    const rest = messagesOf(await resumed.readAll());
    expect(rest.at(-1)).toMatchObject({ id: 41, result: { content: [{ type: 'text', text: 'Waited 3 s.' }] } });
    // Only what came after the given id, and nothing of other streams.
    expect(rest.some((message) => message.method === 'notifications/progress' && message.params.progress === 0.5)).toBe(false);
    expect(rest.filter((message) => 'id' in message && !('method' in message))).toHaveLength(1);

    // From the priming event on, the whole stream is replayed.
    const fromStart = messagesOf(await (await resume(mcp, priming!.id!)).readAll());
    expect(fromStart[0]).toMatchObject({ method: 'notifications/progress', params: { progressToken: 'drop', progress: 0.5 } });
    expect(fromStart.at(-1)).toMatchObject({ id: 41 });
  });

  it('resumes a stream that is still going, then ends it with the result', async () => {
    const mcp = await rawSession();
    const primingId = await callAndDrop(mcp, 42, 'tools/call', { name: 'delay', arguments: { seconds: 2 } });
    const resumed = await resume(mcp, primingId);
    const messages = messagesOf(await resumed.readAll());
    expect(messages.at(-1)).toMatchObject({ id: 42, result: { content: [{ type: 'text', text: 'Waited 2 s.' }] } });
  });

  it('is cancelled by notifications/cancelled, even after the client dropped the stream, and sends no response', async () => {
    const mcp = await rawSession();
    const primingId = await callAndDrop(mcp, 'to-cancel', 'tools/call', { name: 'delay', arguments: { seconds: 60 } });
    const taskId = latestTaskOfSession(mcp.sessionId!)!;
    const cancel = await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'to-cancel', reason: 'not needed' } });
    expect(cancel.status).toBe(202);
    await waitForTaskStatus(taskId, 'cancelled');
    const resumed = messagesOf(await (await resume(mcp, primingId)).readAll());
    expect(resumed.filter((message) => message.id === 'to-cancel')).toEqual([]);
  });

  it('answers a cancel of an unknown request id with 202 and changes nothing', async () => {
    const mcp = await rawSession();
    const response = await mcp.post({ jsonrpc: '2.0', id: 'kept', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 1 } } });
    const reader = new SseReader(response);
    await reader.next();
    expect((await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'never-sent' } })).status).toBe(202);
    expect((await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: { not: 'an id' } } })).status).toBe(202);
    const messages = messagesOf(await reader.readAll());
    expect(messages.at(-1)).toMatchObject({ id: 'kept', result: { content: [{ type: 'text', text: 'Waited 1 s.' }] } });
  });

  it('sends progress heartbeats at least every interval while the tool reports nothing, each higher than the last', async () => {
    const mcp = await rawSession();
    const response = await mcp.post({ jsonrpc: '2.0', id: 'beat', method: 'tools/call', params: { name: 'ask_human', arguments: { question: 'Nobody answers?' }, _meta: { progressToken: 'hb' } } });
    const reader = new SseReader(response);
    const beats: Array<{ progress: number; message?: string; at: number }> = [];
    while (beats.length < 4) {
      const message = await reader.nextMessage(heartbeatMs * 5);
      if (!message) break;
      if (message.method === 'notifications/progress') beats.push({ ...message.params, at: Date.now() });
    }
    expect(beats).toHaveLength(4);
    expect(beats.every((beat: any) => beat.progressToken === 'hb')).toBe(true);
    expect(beats[0].message).toMatch(/^Waiting for input: Nobody answers\? \(answer it in the dashboard: /);
    for (let i = 1; i < beats.length; i += 1) {
      expect(beats[i].progress).toBeGreaterThan(beats[i - 1].progress);
      // Far below the 15 s that clients tolerate; a generous bound, since timers on a busy machine run late.
      expect(beats[i].at - beats[i - 1].at).toBeLessThan(heartbeatMs * 3);
    }
    await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'beat' } });
    await reader.close();
  });

  it('keeps a stream without a progressToken alive with comments', async () => {
    const mcp = await rawSession();
    const controller = new AbortController();
    const response = await mcp.post({ jsonrpc: '2.0', id: 'quiet', method: 'tools/call', params: { name: 'ask_human', arguments: { question: 'Quiet?' } } }, {}, controller.signal);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const deadline = Date.now() + heartbeatMs * 5;
    while (!text.includes(': keep-alive') && Date.now() < deadline) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += decoder.decode(chunk.value);
    }
    expect(text).toContain(': keep-alive');
    expect(text).not.toContain('notifications/progress');
    controller.abort();
    await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'quiet' } });
  });

  it('asks its questions on the call stream and takes the answer there', async () => {
    const mcp = await rawSession(token, { elicitation: {} });
    const response = await mcp.post({ jsonrpc: '2.0', id: 'asking', method: 'tools/call', params: { name: 'ask_human', arguments: { question: 'Here?' } } });
    const reader = new SseReader(response);
    let question;
    do question = await reader.nextMessage();
    while (question && question.method !== 'elicitation/create');
    expect(question).toMatchObject({ method: 'elicitation/create', params: { message: 'Here?' } });
    expect(question!.__eventId).toMatch(/:\d+$/);
    expect(question!.params._meta).toBeUndefined();
    expect((await mcp.post({ jsonrpc: '2.0', id: question!.id, result: { action: 'accept', content: { answer: 'yes, here' } } })).status).toBe(202);
    const final = await reader.nextMessage();
    expect(final).toMatchObject({ id: 'asking', result: { content: expect.arrayContaining([{ type: 'text', text: 'Answer (given in the MCP client): yes, here' }]) } });
    expect(await reader.nextMessage()).toBeNull();
  });

  it("asks the client's model on the call stream for a plain summarize", async () => {
    const mcp = await rawSession(token, { sampling: {} });
    const response = await mcp.post({ jsonrpc: '2.0', id: 'sum', method: 'tools/call', params: { name: 'summarize', arguments: { text: 'A long text.' } } });
    const reader = new SseReader(response);
    let request;
    do request = await reader.nextMessage();
    while (request && request.method !== 'sampling/createMessage');
    expect(request!.params.maxTokens).toBe(300);
    const model = { role: 'assistant', content: { type: 'text', text: 'Short.' }, model: 'test-model' };
    expect((await mcp.post({ jsonrpc: '2.0', id: request!.id, result: model })).status).toBe(202);
    const final = await reader.nextMessage();
    expect(final).toMatchObject({ id: 'sum', result: { content: expect.arrayContaining([{ type: 'text', text: 'Short.' }]), structuredContent: { summary: 'Short.', model: 'test-model' } } });
  });

  it('returns invalid arguments as an isError result, the task failed', async () => {
    const mcp = await rawSession();
    const reply = await mcp.request('tools/call', { name: 'delay', arguments: { seconds: 'ten' } });
    expect(reply.body.result.isError).toBe(true);
    expect(reply.body.result.content[0].text).toMatch(/seconds/);
    const taskId = latestTaskOfSession(mcp.sessionId!)!;
    expect(taskRow(taskId)).toMatchObject({ status: 'failed', invocation: 'call' });
  });

  it('is refused by the same per-user limit as a task, with the same JSON-RPC error', async () => {
    const busy = createToken(server, 'busy@example.com');
    const mcp = await rawSession(busy);
    const taskIds: string[] = [];
    for (let i = 0; i < 3; i += 1) taskIds.push((await mcp.startDelayTask(60)).taskId);
    const refused = await mcp.request('tools/call', { name: 'delay', arguments: { seconds: 1 } });
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(refused.body.error.code).toBe(-32600);
    expect(refused.body.error.message).toMatch(/Too many active tasks/);
    for (const taskId of taskIds) await mcp.call('tasks/cancel', { taskId });
  });

  it("never resumes another session's stream, nor another user's", async () => {
    const owner = await rawSession();
    const response = await owner.post({ jsonrpc: '2.0', id: 'mine', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 0.5 } } });
    const firstId = (await new SseReader(response).readAll())[0].id!;
    for (const other of [await rawSession(createToken(server, 'eve@example.com')), await rawSession()]) {
      // An id of someone else's stream resumes nothing, not even the caller's own GET stream in its place.
      const headers = other.headers({ Accept: 'text/event-stream', 'Last-Event-ID': firstId });
      const refused = await fetch(server.mcpUrl, { method: 'GET', headers });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(await refused.json())).not.toContain('mine');
    }
  });
});

describe('ttl', () => {
  it('accepts a fractional ttl (the schema says number) and grants it in whole milliseconds', async () => {
    const mcp = await rawSession();
    const { task } = await mcp.call('tools/call', { name: 'delay', arguments: { seconds: 0.1 }, task: { ttl: 90_000.6 } });
    expect(task.ttl).toBe(90_001);
  });

  it('refuses a negative ttl with -32602 naming the field', async () => {
    const mcp = await rawSession();
    const error = await mcp.error('tools/call', { name: 'delay', arguments: { seconds: 0.1 }, task: { ttl: -1.5 } });
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(/task\.ttl/);
  });
});

describe('a POST response stream of tasks/result', () => {
  it('resumes with Last-Event-ID and ends with the result', async () => {
    const mcp = await rawSession();
    const task = await mcp.startDelayTask(1.5);
    const primingId = await callAndDrop(mcp, 'result-1', 'tasks/result', { taskId: task.taskId });
    const messages = messagesOf(await (await resume(mcp, primingId)).readAll());
    expect(messages.at(-1)).toMatchObject({ id: 'result-1', result: { content: [{ type: 'text', text: 'Waited 1.5 s.' }] } });
  });
});

describe('after a restart', () => {
  it('follows a plain call again when its stream is resumed, and ends it with the result', async () => {
    const mcp = await rawSession();
    const primingId = await callAndDrop(mcp, 'survivor', 'tools/call', { name: 'delay', arguments: { seconds: 3 } });
    const taskId = latestTaskOfSession(mcp.sessionId!)!;
    await server.restart();
    const messages = messagesOf(await (await resume(mcp, primingId)).readAll());
    expect(messages.at(-1)).toMatchObject({ id: 'survivor', result: { content: [{ type: 'text', text: 'Waited 3 s.' }] } });
    expect(taskRow(taskId)?.status).toBe('completed');
  });
});
