import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagesOf, RawMcp, SseReader } from '../helpers/mcp';
import { createToken, startServer, type TestServer } from '../helpers/server';

/** Short, so that a plain call's heartbeat (which carries the task's status) comes within a test. */
const heartbeatMs = 500;

let server: TestServer;
let token: string;

beforeAll(async () => {
  server = await startServer({ CALL_HEARTBEAT_MS: String(heartbeatMs) });
  token = createToken(server, 'protocol@example.com');
});

afterAll(async () => {
  await server?.stop();
});

const relatedTaskKey = 'io.modelcontextprotocol/related-task';

async function session(version = '2025-11-25', capabilities: Record<string, unknown> = {}): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize(version, capabilities);
  return mcp;
}

/** Headers of a session of an older revision: its own MCP-Protocol-Version. */
const versionHeader = (version: string) => ({ 'MCP-Protocol-Version': version });

const taskRow = (taskId: string) =>
  server.db().prepare('SELECT status, status_message, ttl_ms FROM tasks WHERE id = ?').get(taskId) as
    | { status: string; status_message: string | null; ttl_ms: number }
    | undefined;

const latestTaskOfSession = (sessionId: string) =>
  (server.db().prepare('SELECT id FROM tasks WHERE session_id = ? ORDER BY created_at DESC LIMIT 1').get(sessionId) as { id: string } | undefined)?.id;

const inputsOfTask = (taskId: string) =>
  server.db().prepare('SELECT status FROM task_inputs WHERE task_id = ?').all(taskId) as Array<{ status: string }>;

/** Every message the server wrote to the session's streams, in order. */
const sessionMessages = (sessionId: string) =>
  (server.db().prepare('SELECT message FROM session_messages WHERE session_id = ? ORDER BY id').all(sessionId) as Array<{ message: string }>).map(
    (row) => JSON.parse(row.message) as Record<string, any>,
  );

async function waitForTaskStatus(taskId: string, status: string) {
  await expect.poll(() => taskRow(taskId)?.status, { timeout: 20_000 }).toBe(status);
}

describe('cancelling task-augmented requests', () => {
  it('leaves the task of a task-augmented tools/call running when notifications/cancelled names that call', async () => {
    const mcp = await session();
    const reply = await mcp.post({ jsonrpc: '2.0', id: 'augmented', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 60 }, task: {} } });
    const taskId = (await reply.json()).result.task.taskId;
    expect((await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'augmented' } })).status).toBe(202);
    expect((await mcp.call('tasks/get', { taskId })).status).toBe('working');
    expect((await mcp.call('tasks/cancel', { taskId })).status).toBe('cancelled');
  });

  it('withdraws a question it sent as a task-augmented request with tasks/cancel, never notifications/cancelled', async () => {
    const mcp = await session('2025-11-25', { elicitation: {}, tasks: { cancel: {}, requests: { elicitation: { create: {} } } } });
    const stream = await mcp.openGetStream();
    await stream.next();
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Withdrawn?' }, task: {} });
    const question = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
    expect(question.params.task.ttl).toBeGreaterThan(0);
    // The task ends before the client said which task of its own took the question.
    await mcp.call('tasks/cancel', { taskId: task.taskId });
    expect(inputsOfTask(task.taskId)).toEqual([{ status: 'withdrawn' }]);
    const cancelledNotifications = sessionMessages(mcp.sessionId!).filter((message) => message.method === 'notifications/cancelled');
    expect(cancelledNotifications).toEqual([]);
    // Once the client names its task, that task is cancelled the way tasks are.
    const now = new Date().toISOString();
    const clientTask = { taskId: 'client-task-withdrawn', status: 'working', createdAt: now, lastUpdatedAt: now, ttl: 60000 };
    expect((await mcp.post({ jsonrpc: '2.0', id: question.id, result: { task: clientTask } })).status).toBe(202);
    const cancel = await stream.nextMessageWhere((message) => message.method === 'tasks/cancel');
    expect(cancel.params).toEqual({ taskId: 'client-task-withdrawn' });
    await stream.close();
  });
});

describe('a plain call names no task', () => {
  it.each(['2025-11-25', '2025-06-18', '2025-03-26'])('in a %s session: neither its progress, logs nor response carry related-task _meta', async (version) => {
    const mcp = await session(version);
    const response = await mcp.post(
      { jsonrpc: '2.0', id: 'plain', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 1.2 }, _meta: { progressToken: 'p' } } },
      versionHeader(version),
    );
    const messages = messagesOf(await new SseReader(response).readAll());
    expect(messages.filter((message) => message.method === 'notifications/progress').length).toBeGreaterThan(0);
    const final = messages.at(-1);
    expect(final).toMatchObject({ id: 'plain', result: { content: [{ type: 'text', text: 'Waited 1.2 s.' }] } });
    expect(JSON.stringify(messages)).not.toContain(relatedTaskKey);
    // The call is a task all the same, in the dashboard.
    expect(taskRow(latestTaskOfSession(mcp.sessionId!)!)?.status).toBe('completed');
  });

  it('still names the task in tasks/result of a task-augmented call', async () => {
    const mcp = await session();
    const task = await mcp.startDelayTask(0);
    const result = await mcp.call('tasks/result', { taskId: task.taskId });
    expect(result._meta[relatedTaskKey]).toEqual({ taskId: task.taskId });
  });
});

describe('2025-03-26 batches', () => {
  const batchHeaders = versionHeader('2025-03-26');

  it("takes a client's answer sent inside a batch", async () => {
    const mcp = await session('2025-03-26', { sampling: {} });
    const call = new SseReader(
      await mcp.post({ jsonrpc: '2.0', id: 'sum', method: 'tools/call', params: { name: 'summarize', arguments: { text: 'A long text.' } } }, batchHeaders),
    );
    const question = await call.nextMessageWhere((message) => message.method === 'sampling/createMessage');
    const answer = { role: 'assistant', content: { type: 'text', text: 'Short.' }, model: 'test-model', stopReason: 'endTurn' };
    const batch = await mcp.post(
      [
        { jsonrpc: '2.0', id: question.id, result: answer },
        { jsonrpc: '2.0', id: 'p', method: 'ping' },
      ],
      batchHeaders,
    );
    expect(batch.status).toBe(200);
    expect(await batch.json()).toEqual([{ jsonrpc: '2.0', id: 'p', result: {} }]);
    const final = await call.nextMessageWhere((message) => message.id === 'sum');
    expect(final.result.structuredContent).toEqual({ summary: 'Short.', model: 'test-model' });
  });

  it("sends a plain call's questions and every response on the batch's stream", async () => {
    const mcp = await session('2025-03-26', { elicitation: {} });
    const response = await mcp.post(
      [
        { jsonrpc: '2.0', id: 'ask', method: 'tools/call', params: { name: 'ask_human', arguments: { question: 'Batched?' } } },
        { jsonrpc: '2.0', id: 'p', method: 'ping' },
      ],
      batchHeaders,
      AbortSignal.timeout(15_000),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = new SseReader(response);
    // The ping's response may come before the question: the stream is open from the call's start.
    const beforeQuestion: Array<Record<string, any>> = [];
    const question = await reader.nextMessageWhere((message) => message.method === 'elicitation/create' || (beforeQuestion.push(message), false));
    expect(question.params.message).toBe('Batched?');
    expect(question.params._meta?.[relatedTaskKey]).toBeUndefined();
    expect((await mcp.post({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { answer: 'yes' } } }, batchHeaders)).status).toBe(202);
    const rest = [...beforeQuestion, ...messagesOf(await reader.readAll())];
    const responses = rest.flatMap((message) => (Array.isArray(message) ? message : [message])).filter((message) => !('method' in message));
    expect(responses).toEqual(
      expect.arrayContaining([
        { jsonrpc: '2.0', id: 'p', result: {} },
        expect.objectContaining({ jsonrpc: '2.0', id: 'ask', result: expect.objectContaining({ content: expect.arrayContaining([{ type: 'text', text: 'Answer (given in the MCP client): yes' }]) }) }),
      ]),
    );
    expect(responses).toHaveLength(2);
  });

  it('answers a member it cannot read with "id": null', async () => {
    const mcp = await session('2025-03-26');
    const response = await mcp.post([{ jsonrpc: '2.0', id: 'a', method: 'ping' }, { nonsense: true }, 42], batchHeaders);
    expect(await response.json()).toEqual([
      { jsonrpc: '2.0', id: 'a', result: {} },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/^Invalid Request/) } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/^Invalid Request/) } },
    ]);
  });
});

describe('a question no client can be asked', () => {
  const dashboardLink = (taskId: string) => `${server.url}/tasks/${taskId}`;

  it('says in the status message where to answer it', async () => {
    const mcp = await session();
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Anyone?' }, task: {} });
    await waitForTaskStatus(task.taskId, 'input_required');
    const status = await mcp.call('tasks/get', { taskId: task.taskId });
    expect(status.statusMessage).toContain('Anyone?');
    expect(status.statusMessage).toContain(dashboardLink(task.taskId));
    await mcp.call('tasks/cancel', { taskId: task.taskId });
  });

  it('tells a plain call of a client without elicitation, with or without a progressToken', async () => {
    const mcp = await session();
    const withToken = new SseReader(
      await mcp.post({ jsonrpc: '2.0', id: 'asks', method: 'tools/call', params: { name: 'ask_human', arguments: { question: 'Where?' }, _meta: { progressToken: 7 } } }),
    );
    const seen: Array<Record<string, any>> = [];
    const isHeartbeat = (message: Record<string, any>) => message.method === 'notifications/progress' && /dashboard/.test(message.params.message ?? '');
    await withToken.nextMessageWhere((message) => {
      seen.push(message);
      return seen.some(isHeartbeat) && seen.some((earlier) => earlier.method === 'notifications/message');
    });
    const taskId = latestTaskOfSession(mcp.sessionId!)!;
    expect(seen.find(isHeartbeat)!.params.message).toContain(dashboardLink(taskId));
    const notices = seen.filter((message) => message.method === 'notifications/message');
    expect(notices).toHaveLength(1);
    const notice = notices[0];
    expect(notice.params.level).toBe('notice');
    expect(JSON.stringify(notice.params.data)).toContain(dashboardLink(taskId));
    await withToken.close();
    await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'asks' } });

    const quiet = new SseReader(await mcp.post({ jsonrpc: '2.0', id: 'quiet', method: 'tools/call', params: { name: 'ask_human', arguments: { question: 'Silent?' } } }));
    const told = await quiet.nextMessageWhere((message) => message.method === 'notifications/message');
    const quietTaskId = latestTaskOfSession(mcp.sessionId!)!;
    expect(JSON.stringify(told.params.data)).toContain(dashboardLink(quietTaskId));
    await quiet.close();
    await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'quiet' } });
  });
});

describe('tasks and older protocol versions', () => {
  it("gives a plain call a ttl that outlasts the longest run its tool accepts", async () => {
    const mcp = await session();
    const call = new SseReader(await mcp.post({ jsonrpc: '2.0', id: 'hour', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 3600 } } }));
    await call.next();
    const taskId = latestTaskOfSession(mcp.sessionId!)!;
    // An hour of waiting, then an hour to collect the result.
    expect(taskRow(taskId)!.ttl_ms).toBeGreaterThanOrEqual(2 * 3_600_000);
    await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'hour' } });
    await call.close();
    await waitForTaskStatus(taskId, 'cancelled');
  });

  it.each(['2025-06-18', '2025-03-26'])('tells a %s session nothing of tasks: no execution.taskSupport, no "task" in instructions or descriptions', async (version) => {
    const mcp = new RawMcp(server.mcpUrl, token);
    const initialized = await mcp.initialize(version);
    expect(initialized.capabilities.tasks).toBeUndefined();
    expect(initialized.instructions ?? '').not.toMatch(/"task"|tasks\/|as a task/);
    const reply = await mcp.request('tools/list', undefined, versionHeader(version));
    const tools = reply.body.result.tools as Array<Record<string, any>>;
    expect(tools.length).toBeGreaterThan(0);
    for (const tool of tools) {
      expect(tool.execution).toBeUndefined();
      expect(tool.description).not.toMatch(/as a task|"task"/);
    }
  });

  it('still describes task support to a 2025-11-25 session', async () => {
    const mcp = new RawMcp(server.mcpUrl, token);
    const initialized = await mcp.initialize();
    expect(initialized.instructions).toMatch(/"task"/);
    const { tools } = await mcp.call('tools/list');
    expect(tools.find((tool: any) => tool.name === 'delay').execution).toEqual({ taskSupport: 'optional' });
  });
});

describe('limits at the endpoint', () => {
  const nested = (depth: number) => {
    let value: unknown = 'leaf';
    for (let level = 1; level < depth; level += 1) value = { v: value };
    return value;
  };

  it('refuses a message nested 65 levels deep with -32600, and takes one of 64', async () => {
    const mcp = await session();
    // The message is level 1, params level 2, arguments level 3; `nested(n)` adds n - 1 more.
    const call = (depth: number) => ({ jsonrpc: '2.0', id: depth, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x', extra: nested(depth - 2) } } });
    const tooDeep = await mcp.post(call(65));
    expect(tooDeep.status).toBe(400);
    expect((await tooDeep.json()).error).toMatchObject({ code: -32600, message: expect.stringContaining('nests deeper than 64 levels') });
    const deepest = await mcp.post(call(64));
    expect(deepest.status).toBe(200);
    expect((await deepest.json()).result.content).toEqual([{ type: 'text', text: 'x' }]);
  });

  it('refuses an initialize whose protocolVersion is over 64 characters, creating no session', async () => {
    const mcp = new RawMcp(server.mcpUrl, token);
    const sessions = () => (server.db().prepare('SELECT count(*) AS n FROM mcp_sessions').get() as { n: number }).n;
    const before = sessions();
    const refused = await mcp.request('initialize', { protocolVersion: '2'.repeat(65), capabilities: {}, clientInfo: { name: 'x', version: '1' } });
    expect(refused.body.error).toMatchObject({ code: -32602, message: expect.stringContaining('protocolVersion') });
    expect(refused.headers.get('mcp-session-id')).toBeNull();
    expect(sessions()).toBe(before);
    const longest = await mcp.request('initialize', { protocolVersion: '2'.repeat(64), capabilities: {}, clientInfo: { name: 'x', version: '1' } });
    expect(longest.body.result.protocolVersion).toBe('2025-11-25');
  });

  const fields = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`f${index}`, { type: 'string' }]));
  const options = (count: number) => Array.from({ length: count }, (_, index) => `option ${index}`);

  it.each([
    ['51 fields', { question: 'Too many fields?', fields: fields(51) }, 'at most 50 fields'],
    ['101 choices', { question: 'Too many choices?', choices: options(101) }, 'choices'],
    ['a choice of 501 characters', { question: 'Too long a choice?', choices: ['c'.repeat(501)] }, 'choices.0'],
  ])('ask_human refuses %s at the call, asking nothing', async (_name, args, reason) => {
    const mcp = await session('2025-11-25', { elicitation: {} });
    const result = await mcp.call('tools/call', { name: 'ask_human', arguments: args });
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toContain('Invalid arguments for tool ask_human');
    expect(result.content[0].text).toContain(reason);
    const taskId = latestTaskOfSession(mcp.sessionId!)!;
    expect(taskRow(taskId)?.status).toBe('failed');
    expect(inputsOfTask(taskId)).toEqual([]);
  });

  it.each([
    ['50 fields', { question: 'Fifty fields?', fields: fields(50) }],
    ['100 choices', { question: 'A hundred choices?', choices: options(100) }],
  ])('ask_human asks a question of %s', async (_name, args) => {
    const mcp = await session();
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: args, task: {} });
    await waitForTaskStatus(task.taskId, 'input_required');
    expect(inputsOfTask(task.taskId)).toEqual([{ status: 'pending' }]);
    await mcp.call('tasks/cancel', { taskId: task.taskId });
  });

  it('ask_human refuses a field of 101 options as it asks, with -32602', async () => {
    const mcp = await session();
    const args = { question: 'A long list?', fields: { pick: { type: 'string', enum: options(101) } } };
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: args, task: {} });
    const outcome = await mcp.request('tasks/result', { taskId: task.taskId });
    expect(outcome.body.error).toMatchObject({ code: -32602, message: expect.stringContaining('Invalid elicitation') });
    expect(inputsOfTask(task.taskId)).toEqual([]);
  });
});
