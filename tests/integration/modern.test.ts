import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createApplicationInputHandler, createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerInDashboard } from '../helpers/dashboard';
import { connectSdk2Client, RawMcp, sleep, SseReader } from '../helpers/mcp';
import { ModernMcp, modernVersion, readReply, tasksExtension } from '../helpers/modern';
import { createToken, startServer, testDatabase, type TestServer } from '../helpers/server';

/**
 * Protocol revision 2026-07-28 on the same /mcp as 2025-11-25: stateless requests, the tasks extension
 * (io.modelcontextprotocol/tasks) and multi round-trip tool calls, on the same durable tasks, bound to
 * the same users, answerable in the same dashboard. A raw-HTTP client of our own speaks the revision
 * (tests/helpers/modern.ts); the SDK 2.x client speaks it too when it may choose its era.
 */

/** Short, so that a plain call's rounds can be watched; the checks are relative to it. */
const roundWaitMs = 1500;

let server: TestServer;
let token: string;
let otherToken: string;

beforeAll(async () => {
  server = await startServer({ MCP_FIXTURE_TOOLS: '1', MCP_ROUND_WAIT_MS: String(roundWaitMs), CALL_HEARTBEAT_MS: '1000' });
  token = createToken(server, 'ada@example.com');
  otherToken = createToken(server, 'bob@example.com');
});

afterAll(async () => {
  await server?.stop();
});

const withTasks = { elicitation: {}, extensions: { [tasksExtension]: {} } };
const taskClient = () => new ModernMcp(server.mcpUrl, token, withTasks);
const plainClient = (capabilities: Record<string, unknown> = { elicitation: {} }) => new ModernMcp(server.mcpUrl, token, capabilities);

const taskRow = (taskId: string) =>
  server.db().prepare('SELECT status, invocation, client_name, protocol_version, session_id, result FROM tasks WHERE id = ?').get(taskId) as
    | { status: string; invocation: string; client_name: string | null; protocol_version: string | null; session_id: string | null; result: string | null }
    | undefined;
const tasksOfTool = (toolName: string) => (server.db().prepare('SELECT id FROM tasks WHERE tool_name = ? ORDER BY created_at').all(toolName) as Array<{ id: string }>).map((row) => row.id);
const pendingInputs = (taskId: string) => server.db().prepare("SELECT id, key FROM task_inputs WHERE task_id = ? AND status = 'pending'").all(taskId) as Array<{ id: string; key: string }>;

async function untilStatus(mcp: ModernMcp, taskId: string, status: string): Promise<Record<string, any>> {
  let task: Record<string, any> = {};
  await expect
    .poll(async () => {
      task = await mcp.call('tasks/get', { taskId });
      return task.status;
    }, { timeout: 20_000 })
    .toBe(status);
  return task;
}

describe('one endpoint, two eras', () => {
  it('answers server/discover with both eras, the tasks extension and caching hints, and mints no session', async () => {
    const reply = await plainClient({}).request('server/discover');
    expect(reply.status).toBe(200);
    expect(reply.headers.get('mcp-session-id')).toBeNull();
    const result = reply.body.result;
    expect(result.resultType).toBe('complete');
    expect(result.supportedVersions).toEqual(expect.arrayContaining([modernVersion, '2025-11-25']));
    expect(result.capabilities.extensions).toEqual({ [tasksExtension]: {} });
    // The extension replaced the 2025-11-25 capability.
    expect(result.capabilities.tasks).toBeUndefined();
    expect(result.ttlMs).toBeGreaterThan(0);
    expect(result.cacheScope).toBe('public');
    expect(result._meta['io.modelcontextprotocol/serverInfo']).toEqual({
      name: 'mcp-task-server',
      title: 'MCP Task Server',
      version: expect.any(String),
      description: expect.any(String),
      websiteUrl: server.url,
    });
  });

  it('keeps initialize, sessions and 2025-11-25 tasks for a legacy client on the same endpoint', async () => {
    const legacy = new RawMcp(server.mcpUrl, token);
    await legacy.initialize('2025-11-25', {});
    const legacyTools = await legacy.call('tools/list', {});
    expect(legacyTools.tools.find((tool: any) => tool.name === 'delay').execution).toEqual({ taskSupport: 'optional' });
    expect(legacyTools.resultType).toBeUndefined();
    const modernTools = await plainClient().call('tools/list');
    // The modern Tool has no execution field; the list is the same for every user, and says how long it keeps.
    expect(modernTools.tools.find((tool: any) => tool.name === 'delay').execution).toBeUndefined();
    expect(modernTools.tools.map((tool: any) => tool.name)).toEqual(legacyTools.tools.map((tool: any) => tool.name));
    expect(modernTools).toMatchObject({ resultType: 'complete', cacheScope: 'public', ttlMs: expect.any(Number) });
    // Annotations and output schemas are the same in both eras, but for the early answer a legacy client without tasks may get.
    const described = (list: any) =>
      list.tools.map((tool: any) => ({ name: tool.name, annotations: tool.annotations, outputSchema: tool.outputSchema?.anyOf?.[0] ?? tool.outputSchema }));
    expect(described(modernTools)).toEqual(described(legacyTools));
    expect(modernTools.tools.find((tool: any) => tool.name === 'ask_human')).toMatchObject({ annotations: { openWorldHint: true }, outputSchema: { type: 'object' } });
  });

  it('serves a request with modern _meta statelessly even when it carries a stray Mcp-Session-Id', async () => {
    const legacy = new RawMcp(server.mcpUrl, token);
    await legacy.initialize('2025-11-25', {});
    const mcp = plainClient();
    for (const sessionId of [crypto.randomUUID(), legacy.sessionId!]) {
      const reply = await mcp.request('tools/call', { name: 'echo', arguments: { text: 'stateless' } }, { headers: { 'Mcp-Session-Id': sessionId } });
      expect(reply.status).toBe(200);
      expect(reply.headers.get('mcp-session-id')).toBeNull();
      expect(reply.body.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'stateless' }] });
    }
    // The legacy session is untouched by it.
    expect((await legacy.request('ping')).status).toBe(200);
  });

  it('refuses a tools/list cursor it never issued with -32602, in both eras', async () => {
    const reply = await plainClient().request('tools/list', { cursor: 'not-a-cursor' });
    expect(reply.body.error).toMatchObject({ code: -32602, message: expect.stringMatching(/cursor/) });
    const legacy = new RawMcp(server.mcpUrl, token);
    await legacy.initialize('2025-11-25', {});
    expect((await legacy.request('tools/list', { cursor: 'not-a-cursor' })).body.error).toMatchObject({ code: -32602, message: expect.stringMatching(/cursor/) });
    expect((await legacy.request('tools/list', { cursor: 17 })).body.error.code).toBe(-32602);
  });

  it('refuses a protocol version it does not speak with -32022, listing the versions it does', async () => {
    const mcp = plainClient();
    const { body, headers } = mcp.build('tools/list', {}, { meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }, headers: { 'MCP-Protocol-Version': '2099-01-01' } });
    const reply = await readReply(await mcp.post(body, headers));
    expect(reply.status).toBe(400);
    expect(reply.body.id).toBe(body.id);
    expect(reply.body.error.code).toBe(-32022);
    expect(reply.body.error.data).toEqual({ supported: expect.arrayContaining([modernVersion, '2025-11-25']), requested: '2099-01-01' });
  });

  it('refuses headers that are missing or say something other than the body, with -32020 and nothing done', async () => {
    const mcp = taskClient();
    const before = tasksOfTool('delay').length;
    const cases: Array<Record<string, string | null>> = [
      { 'MCP-Protocol-Version': null },
      { 'MCP-Protocol-Version': '2025-11-25', 'Mcp-Session-Id': null },
      { 'Mcp-Method': null },
      { 'Mcp-Method': 'tools/list' },
      { 'Mcp-Name': null },
      { 'Mcp-Name': 'echo' },
      { 'Mcp-Name': '=?base64?ZWNobw==?=' },
    ];
    for (const headers of cases) {
      const reply = await mcp.request('tools/call', { name: 'delay', arguments: { seconds: 0 } }, { headers });
      expect(reply.status, JSON.stringify(headers)).toBe(400);
      expect(reply.body.error.code, JSON.stringify(headers)).toBe(-32020);
    }
    expect(tasksOfTool('delay').length).toBe(before);
    // A name the client encoded the way the transport says is decoded before it is compared.
    const encoded = await mcp.request('tools/call', { name: 'echo', arguments: { text: 'hi' } }, { headers: { 'Mcp-Name': '=?base64?ZWNobw==?=' } });
    expect(encoded.status).toBe(200);
    expect(encoded.body.result.content).toEqual([{ type: 'text', text: 'hi' }]);
  });

  it('refuses a _meta without the capabilities, or with wrong types, with -32602 naming the field', async () => {
    const mcp = plainClient();
    const missing = mcp.build('tools/list');
    delete (missing.body.params._meta as Record<string, unknown>)['io.modelcontextprotocol/clientCapabilities'];
    const reply = await readReply(await mcp.post(missing.body, missing.headers));
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe(-32602);
    expect(reply.body.error.message).toContain('io.modelcontextprotocol/clientCapabilities');
    const wrongType = await mcp.request('tools/call', { name: 'echo', arguments: 'not an object' });
    expect(wrongType.body.error.code).toBe(-32602);
    expect(wrongType.body.error.message).toContain('arguments');
    const malformed = await mcp.post('{"jsonrpc": "2.0", "id": 1, "method": ', mcp.build('tools/list').headers);
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as any).error.code).toBe(-32700);
  });

  it('answers methods this revision removed, or never had, with 404 and -32601; GET with 405', async () => {
    const mcp = taskClient();
    for (const method of ['initialize', 'ping', 'logging/setLevel', 'tasks/result', 'tasks/list', 'prompts/list']) {
      const reply = await mcp.request(method, method.startsWith('tasks/') ? { taskId: 'x' } : {}, { headers: { 'Mcp-Name': null } });
      expect(reply.status, method).toBe(404);
      expect(reply.body.error.code, method).toBe(-32601);
    }
    const get = await fetch(server.mcpUrl, { headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream', 'MCP-Protocol-Version': modernVersion } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    // No token: the same 401 and challenge as in the legacy era.
    const anonymous = await fetch(server.mcpUrl, { method: 'POST', headers: { ...mcp.build('tools/list').headers, Authorization: '' }, body: JSON.stringify(mcp.build('tools/list').body) });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer /);
  });
});

describe('limits, for both eras alike', () => {
  let limited: TestServer;
  let limitedToken: string;

  beforeAll(async () => {
    limited = await startServer({ RATE_LIMIT_PER_TOKEN: '6', MCP_MAX_STREAMS_PER_USER: '1' });
    limitedToken = createToken(limited, 'limited@example.com');
  });

  afterAll(async () => {
    await limited?.stop();
  });

  it('counts a subscription as a stream, and modern requests against the same rate limit', async () => {
    const mcp = new ModernMcp(limited.mcpUrl, limitedToken, { extensions: { [tasksExtension]: {} } });
    const first = mcp.build('subscriptions/listen', { notifications: {} });
    const closing = new AbortController();
    const open = await mcp.post(first.body, first.headers, closing.signal);
    expect((await new SseReader(open).nextMessage())!.method).toBe('notifications/subscriptions/acknowledged');
    const second = await mcp.request('subscriptions/listen', { notifications: {} });
    expect(second.status).toBe(429);
    expect(second.body.error.message).toContain('streams open');
    expect(second.headers.get('retry-after')).toMatch(/^\d+$/);
    closing.abort();
    const listTools = async () => {
      const { id, body, headers } = mcp.build('tools/list');
      return { id, reply: await readReply(await mcp.post(body, headers)) };
    };
    let { id, reply } = await listTools();
    for (let sent = 3; reply.status === 200 && sent <= 10; sent += 1) ({ id, reply } = await listTools());
    expect(reply.status).toBe(429);
    expect(reply.body.error.message).toContain('this access token sent too many requests');
    // A code outside the range 2026-07-28 reserves (-32020…-32099 and JSON-RPC's own), and the request's id.
    expect(reply.body).toMatchObject({ id, error: { code: -31429 } });
  });
});

describe('the tasks extension', () => {
  it('creates a durable task, asks its question through tasks/get, takes the answer with tasks/update, and completes', async () => {
    const mcp = taskClient();
    const created = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Favourite colour?' } });
    expect(created).toMatchObject({ resultType: 'task', status: 'working', ttlMs: expect.any(Number), pollIntervalMs: expect.any(Number) });
    expect(created).not.toHaveProperty('task');
    expect(created).not.toHaveProperty('ttl');
    // Durable before it was acknowledged.
    expect(taskRow(created.taskId)).toMatchObject({ protocol_version: modernVersion, client_name: 'modern-test-client', session_id: null, invocation: 'task' });
    // The request log records it like any creation, with the client and its protocol revision.
    await expect
      .poll(() => server.output().split('\n').find((line) => line.includes('"event":"task.created"') && line.includes(created.taskId)))
      .toMatch(/"client":"modern-test-client\/1.0.0".*"protocolVersion":"2026-07-28"/);
    const waiting = await untilStatus(mcp, created.taskId, 'input_required');
    expect(waiting.resultType).toBe('complete');
    expect(waiting.inputRequests).toEqual({
      answer: { method: 'elicitation/create', params: expect.objectContaining({ mode: 'form', message: 'Favourite colour?' }) },
    });
    // An answer that does not fit the question is refused, and the question stays open.
    const unfit = await mcp.request('tasks/update', { taskId: created.taskId, inputResponses: { answer: { action: 'accept', content: {} } } });
    expect(unfit.body.error.code).toBe(-32602);
    expect(unfit.body.error.message).toContain('inputResponses.answer');
    // A key the task never asked is ignored.
    expect(await mcp.call('tasks/update', { taskId: created.taskId, inputResponses: { nope: { action: 'accept', content: {} } } })).toMatchObject({ resultType: 'complete' });
    expect((await mcp.call('tasks/get', { taskId: created.taskId })).status).toBe('input_required');
    expect(await mcp.call('tasks/update', { taskId: created.taskId, inputResponses: { answer: { action: 'accept', content: { answer: 'blue' } } } })).toMatchObject({ resultType: 'complete' });
    const done = await untilStatus(mcp, created.taskId, 'completed');
    expect(done.result.content[0]).toEqual({ type: 'text', text: 'Answer (given in the MCP client): blue' });
    expect(done.result._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
    // A second answer to the same question is ignored: the first one won.
    await mcp.call('tasks/update', { taskId: created.taskId, inputResponses: { answer: { action: 'accept', content: { answer: 'red' } } } });
    expect((await mcp.call('tasks/get', { taskId: created.taskId })).result.content[0].text).toContain('blue');
  });

  it('takes the answers of one tasks/update all or none: a misfit among them refuses every one, naming it', async () => {
    const mcp = taskClient();
    const created = await mcp.call('tools/call', { name: 'survey', arguments: { questions: ['One?', 'Two?'] } });
    await expect.poll(() => pendingInputs(created.taskId).length, { timeout: 20_000 }).toBe(2);
    const mixed = await mcp.request('tasks/update', {
      taskId: created.taskId,
      inputResponses: { 'question-1': { action: 'accept', content: { answer: 'fits' } }, 'question-2': { action: 'accept', content: {} } },
    });
    expect(mixed.body.error.code).toBe(-32602);
    expect(mixed.body.error.message).toContain('inputResponses.question-2');
    expect(mixed.body.error.message).not.toContain('inputResponses.question-1');
    expect(Object.keys(mixed.body.error.data.fieldErrors)).toEqual(['question-2']);
    // Nothing was taken: both questions are still open, and the task still waits.
    expect(pendingInputs(created.taskId).map((input) => input.key).sort()).toEqual(['question-1', 'question-2']);
    expect(taskRow(created.taskId)!.status).toBe('input_required');
    await mcp.call('tasks/update', {
      taskId: created.taskId,
      inputResponses: { 'question-1': { action: 'accept', content: { answer: 'one' } }, 'question-2': { action: 'accept', content: { answer: 'two' } } },
    });
    const done = await untilStatus(mcp, created.taskId, 'completed');
    expect(done.result.content[0].text).toBe('1. One? one\n2. Two? two');
  });

  it('is driven to the end by the official requester (ext-tasks 0.2.2), which answers the question itself', async () => {
    const { client, close } = await connectSdk2Client(server.mcpUrl, token, { name: 'ext-tasks-host', chooseEra: true });
    const clientCapabilities = { elicitation: { form: {} }, extensions: { [tasksExtension]: {} } };
    const raw = new ModernMcp(server.mcpUrl, token);
    const asked: string[] = [];
    const session = createTaskSessionFromClient(client, {
      endpointId: 'modern-test',
      v2RequestFraming: { protocolVersion: modernVersion, clientInfo: { name: 'ext-tasks', version: '0.2.2' }, clientCapabilities },
      rawDispatch: (request) => raw.rawDispatch(request as { method: string; params?: Record<string, unknown> }),
      onInputRequest: createApplicationInputHandler({
        elicitation: async (request) => {
          asked.push(String((request as any).params?.message ?? (request as any).message));
          return { action: 'accept', content: { answer: 'from the requester' } };
        },
        sampling: async () => {
          throw new Error('not asked');
        },
        roots: async () => ({ roots: [] }),
      }),
    });
    try {
      const execution = await session.callTool('ask_human', { question: 'Through the official requester?' });
      expect(execution.kind).toBe('task');
      const { outcome } = await execution.settle();
      const result: any = resultFromTaskOutcome(outcome);
      expect(result.content[0]).toEqual({ type: 'text', text: 'Answer (given in the MCP client): from the requester' });
      expect(asked).toHaveLength(1);
      const [taskId] = tasksOfTool('ask_human').slice(-1);
      expect(taskRow(taskId)).toMatchObject({ client_name: 'ext-tasks', protocol_version: modernVersion, invocation: 'task', status: 'completed' });
    } finally {
      await session.close();
      await close();
    }
  });

  it('ends a tool error completed (2026-07-28) and the same stored task failed (2025-11-25): mapped when read', async () => {
    const mcp = taskClient();
    const created = await mcp.call('tools/call', { name: 'delay', arguments: { seconds: 0, fail: true } });
    const done = await untilStatus(mcp, created.taskId, 'completed');
    expect(done.result.isError).toBe(true);
    expect(done).not.toHaveProperty('error');
    const legacy = new RawMcp(server.mcpUrl, token);
    await legacy.initialize('2025-11-25', {});
    expect((await legacy.call('tasks/get', { taskId: created.taskId })).status).toBe('failed');
    expect(taskRow(created.taskId)!.status).toBe('failed');
  });

  it('ends a JSON-RPC error failed, with the error inline', async () => {
    const mcp = taskClient();
    const created = await mcp.call('tools/call', { name: 'protocol_error_job', arguments: {} });
    const failed = await untilStatus(mcp, created.taskId, 'failed');
    expect(failed.error).toEqual({ code: -32603, message: 'The job hit an internal error' });
    expect(failed).not.toHaveProperty('result');
  });

  it('cancels with an acknowledgement; a second cancel is acknowledged too; an unknown task is -32602', async () => {
    const mcp = taskClient();
    const created = await mcp.call('tools/call', { name: 'delay', arguments: { seconds: 30 } });
    expect(await mcp.call('tasks/cancel', { taskId: created.taskId })).toEqual({ resultType: 'complete', _meta: expect.any(Object) });
    expect((await mcp.call('tasks/get', { taskId: created.taskId })).status).toBe('cancelled');
    expect((await mcp.request('tasks/cancel', { taskId: created.taskId })).body.result).toBeDefined();
    const unknown = await mcp.request('tasks/cancel', { taskId: crypto.randomUUID() });
    expect(unknown.body.error.code).toBe(-32602);
  });

  it('gives a request that does not declare the extension no task and no tasks/* (-32021, HTTP 400)', async () => {
    const created = await taskClient().call('tools/call', { name: 'delay', arguments: { seconds: 0 } });
    const plain = plainClient({});
    for (const [method, params] of [
      ['tasks/get', { taskId: created.taskId }],
      ['tasks/update', { taskId: created.taskId, inputResponses: {} }],
      ['tasks/cancel', { taskId: created.taskId }],
      ['tools/call', { name: 'fixture_requires_task', arguments: {} }],
    ] as const) {
      const reply = await plain.request(method, params);
      expect(reply.status, method).toBe(400);
      expect(reply.body.error.code, method).toBe(-32021);
      expect(reply.body.error.data).toEqual({ requiredCapabilities: { extensions: { [tasksExtension]: {} } } });
    }
    const listen = await plain.request('subscriptions/listen', { notifications: { taskIds: [created.taskId] } });
    expect(listen.body.error.code).toBe(-32021);
    // The same tool without the extension is answered in the call.
    const result = await plain.call('tools/call', { name: 'delay', arguments: { seconds: 0 } });
    expect(result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Waited 0 s.' }] });
    expect(result).not.toHaveProperty('taskId');
  });

  it("keeps users apart: another user's task is unknown to every method, exactly like one that does not exist", async () => {
    const mine = taskClient();
    const created = await mine.call('tools/call', { name: 'ask_human', arguments: { question: 'Only mine?' } });
    await untilStatus(mine, created.taskId, 'input_required');
    const theirs = new ModernMcp(server.mcpUrl, otherToken, withTasks);
    const unknown = await theirs.request('tasks/get', { taskId: crypto.randomUUID() });
    const foreign = await theirs.request('tasks/get', { taskId: created.taskId });
    expect(foreign.body.error).toEqual(unknown.body.error);
    expect((await theirs.request('tasks/update', { taskId: created.taskId, inputResponses: { answer: { action: 'accept', content: { answer: 'theirs' } } } })).body.error.code).toBe(-32602);
    expect((await theirs.request('tasks/cancel', { taskId: created.taskId })).body.error.code).toBe(-32602);
    const built = theirs.build('subscriptions/listen', { notifications: { taskIds: [created.taskId] } });
    const closing = new AbortController();
    const listen = await theirs.post(built.body, built.headers, closing.signal);
    const acknowledged = await new SseReader(listen).nextMessage();
    expect(acknowledged!.params.notifications).toEqual({});
    closing.abort();
    expect(pendingInputs(created.taskId)).toHaveLength(1);
    expect(taskRow(created.taskId)!.status).toBe('input_required');
    await mine.call('tasks/cancel', { taskId: created.taskId });
  });

  it('streams notifications/tasks on subscriptions/listen: acknowledged first, then each change as tasks/get would give it', async () => {
    const mcp = taskClient();
    const created = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Tell me on the stream?' } });
    await untilStatus(mcp, created.taskId, 'input_required');
    const built = mcp.build('subscriptions/listen', { notifications: { taskIds: [created.taskId, crypto.randomUUID()], toolsListChanged: true } });
    const controller = new AbortController();
    const response = await mcp.post(built.body, built.headers, controller.signal);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const stream = new SseReader(response);
    const acknowledged = await stream.nextMessage();
    expect(acknowledged).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': built.id }, notifications: { taskIds: [created.taskId] } },
    });
    await mcp.call('tasks/update', { taskId: created.taskId, inputResponses: { answer: { action: 'accept', content: { answer: 'streamed' } } } });
    const completed = await stream.nextMessageWhere((message) => message.params?.status === 'completed');
    expect(completed.method).toBe('notifications/tasks');
    expect(completed.params._meta).toEqual({ 'io.modelcontextprotocol/subscriptionId': built.id });
    expect(completed.params).toMatchObject({ taskId: created.taskId, result: { content: expect.arrayContaining([{ type: 'text', text: 'Answer (given in the MCP client): streamed' }]) } });
    const { _meta: _ignored, ...task } = completed.params;
    expect(task).toEqual(await mcp.call('tasks/get', { taskId: created.taskId }).then(({ resultType: _r, _meta: _m, ...rest }) => rest));
    controller.abort();
  });

  it('sends, right after the acknowledgement, each named task that has ended or waits for input already', async () => {
    const mcp = taskClient();
    const ended = await mcp.call('tools/call', { name: 'delay', arguments: { seconds: 0 } });
    const asking = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Asked before you listened?' } });
    const working = await mcp.call('tools/call', { name: 'delay', arguments: { seconds: 3600 } });
    await untilStatus(mcp, ended.taskId, 'completed');
    await untilStatus(mcp, asking.taskId, 'input_required');
    const built = mcp.build('subscriptions/listen', { notifications: { taskIds: [ended.taskId, asking.taskId, working.taskId] } });
    const controller = new AbortController();
    const stream = new SseReader(await mcp.post(built.body, built.headers, controller.signal));
    expect((await stream.nextMessage())!.method).toBe('notifications/subscriptions/acknowledged');
    const first = [await stream.nextMessage(), await stream.nextMessage()];
    expect(first.map((message) => message!.method)).toEqual(['notifications/tasks', 'notifications/tasks']);
    const byTask = Object.fromEntries(first.map((message) => [message!.params.taskId, message!.params]));
    expect(byTask[ended.taskId]).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'Waited 0 s.' }] } });
    expect(byTask[asking.taskId]).toMatchObject({ status: 'input_required', inputRequests: { answer: { method: 'elicitation/create' } } });
    // The working task is told of when it changes, not before.
    await mcp.call('tasks/cancel', { taskId: working.taskId });
    expect((await stream.nextMessage())!.params).toMatchObject({ taskId: working.taskId, status: 'cancelled' });
    controller.abort();
    await mcp.call('tasks/cancel', { taskId: asking.taskId });
  });
});

describe('multi round-trip calls (no extension)', () => {
  it('answers a plain ask_human with the question and a requestState; the retry answers it; one task in all', async () => {
    const mcp = plainClient();
    const before = tasksOfTool('ask_human').length;
    const first = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Tea or coffee?' } });
    expect(first.resultType).toBe('input_required');
    expect(first.inputRequests).toEqual({ answer: { method: 'elicitation/create', params: expect.objectContaining({ message: 'Tea or coffee?' }) } });
    expect(first.requestState).toEqual(expect.any(String));
    expect(first).not.toHaveProperty('taskId');
    const [taskId] = tasksOfTool('ask_human').slice(before);
    expect(taskRow(taskId)).toMatchObject({ status: 'input_required', invocation: 'call', protocol_version: modernVersion });
    const done = await mcp.call('tools/call', {
      name: 'ask_human',
      arguments: { question: 'Tea or coffee?' },
      requestState: first.requestState,
      inputResponses: { answer: { action: 'accept', content: { answer: 'tea' } } },
    });
    expect(done).toMatchObject({ resultType: 'complete', content: expect.arrayContaining([{ type: 'text', text: 'Answer (given in the MCP client): tea' }]) });
    expect(tasksOfTool('ask_human').length).toBe(before + 1);
    expect(taskRow(taskId)!.status).toBe('completed');
  });

  it("asks the client's model through the rounds (summarize), and refuses a client that declared no sampling", async () => {
    const args = { text: 'A long text about tasks that outlive the requests that started them.' };
    const refused = await plainClient({ elicitation: {} }).request('tools/call', { name: 'summarize', arguments: args });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
    const mcp = plainClient({ sampling: {} });
    const first = await mcp.call('tools/call', { name: 'summarize', arguments: args });
    expect(first.inputRequests.summary).toMatchObject({ method: 'sampling/createMessage', params: { maxTokens: 300 } });
    const done = await mcp.call('tools/call', {
      name: 'summarize',
      arguments: args,
      requestState: first.requestState,
      inputResponses: { summary: { role: 'assistant', content: { type: 'text', text: 'Tasks outlive requests.' }, model: 'test-model' } },
    });
    expect(done).toMatchObject({ content: expect.arrayContaining([{ type: 'text', text: 'Tasks outlive requests.' }]), structuredContent: { summary: 'Tasks outlive requests.', model: 'test-model' } });
  });

  it('carries a survey over as many rounds as its questions need, still one task', async () => {
    const mcp = plainClient();
    const before = tasksOfTool('survey').length;
    const args = { questions: ['First?', 'Second?', 'Third?'] };
    let reply = await mcp.call('tools/call', { name: 'survey', arguments: args });
    const asked = new Set<string>();
    for (let round = 0; reply.resultType === 'input_required' && round < 10; round += 1) {
      const keys = Object.keys(reply.inputRequests ?? {});
      for (const key of keys) asked.add(key);
      const inputResponses = Object.fromEntries(keys.map((key) => [key, { action: 'accept', content: { answer: `answer to ${key}` } }]));
      reply = await mcp.call('tools/call', { name: 'survey', arguments: args, requestState: reply.requestState, inputResponses });
    }
    expect([...asked].sort()).toEqual(['question-1', 'question-2', 'question-3']);
    expect(reply.content[0].text).toBe('1. First? answer to question-1\n2. Second? answer to question-2\n3. Third? answer to question-3');
    expect(tasksOfTool('survey').length).toBe(before + 1);
  });

  it('sees a question answered in the dashboard meanwhile: a client that cannot be asked waits in rounds', async () => {
    const mcp = plainClient({});
    const started = Date.now();
    const first = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Answer me in the browser?' } });
    // Nothing this client can answer: the round ends after its time, with only the state to retry with.
    expect(Date.now() - started).toBeGreaterThanOrEqual(roundWaitMs - 100);
    expect(first).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    expect(first).not.toHaveProperty('inputRequests');
    const [taskId] = tasksOfTool('ask_human').slice(-1);
    await answerInDashboard(server, 'ada@example.com', taskId, 'from the browser');
    const done = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Answer me in the browser?' }, requestState: first.requestState });
    expect(done.content[0]).toEqual({ type: 'text', text: 'Answer (given in the dashboard): from the browser' });
  });

  it('refuses a tampered, foreign, mismatched or expired requestState, and answers nothing with it', async () => {
    const mcp = plainClient();
    const args = { question: 'Guarded?' };
    const first = await mcp.call('tools/call', { name: 'ask_human', arguments: args });
    const [taskId] = tasksOfTool('ask_human').slice(-1);
    const answer = { answer: { action: 'accept', content: { answer: 'forged' } } };
    const state: string = first.requestState;
    const flipped = state.slice(0, -2) + (state.at(-2) === 'A' ? 'B' : 'A') + state.at(-1);
    const [header, payload] = state.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const secret =
      testDatabase === 'postgres' ? (server.db().prepare('SELECT secret FROM generated_secret').pluck().get() as string) : fs.readFileSync(path.join(server.dataDir, 'secret'), 'utf8').trim();
    const key = new Uint8Array(createHmac('sha256', secret).update('mcp request state v1').digest());
    const expired = await new SignJWT({ task: claims.task, method: claims.method, digest: claims.digest })
      .setProtectedHeader(JSON.parse(Buffer.from(header, 'base64url').toString()))
      .setSubject(claims.sub)
      .setAudience(claims.aud)
      .setIssuedAt(claims.iat - 7200)
      .setExpirationTime(claims.iat - 3600)
      .sign(key);
    const attempts: Array<[string, ModernMcp, Record<string, unknown>, RegExp]> = [
      ['tampered', mcp, { name: 'ask_human', arguments: args, requestState: flipped }, /not one this server issued/],
      ['another user', new ModernMcp(server.mcpUrl, otherToken, { elicitation: {} }), { name: 'ask_human', arguments: args, requestState: state }, /another user/],
      ['other arguments', mcp, { name: 'ask_human', arguments: { question: 'Something else?' }, requestState: state }, /another request/],
      ['another tool', mcp, { name: 'survey', arguments: {}, requestState: state }, /another request/],
      ['expired', mcp, { name: 'ask_human', arguments: args, requestState: expired }, /expired/],
    ];
    for (const [what, client, params, message] of attempts) {
      const reply = await client.request('tools/call', { ...params, inputResponses: answer });
      expect(reply.body.error?.code, what).toBe(-32602);
      expect(reply.body.error.message, what).toMatch(message);
    }
    expect(pendingInputs(taskId)).toHaveLength(1);
    expect(taskRow(taskId)!.status).toBe('input_required');
  });

  it('loses nothing when the server is killed between the InputRequiredResult and the retry', async () => {
    const mcp = plainClient();
    const first = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Still there after a crash?' } });
    const [taskId] = tasksOfTool('ask_human').slice(-1);
    await server.kill9();
    await server.restart();
    const args = { name: 'ask_human', arguments: { question: 'Still there after a crash?' } };
    let done = await mcp.call('tools/call', { ...args, requestState: first.requestState, inputResponses: { answer: { action: 'accept', content: { answer: 'yes' } } } });
    // Until the task runs again (on PostgreSQL the new process waits out the dead one's lease first), the
    // rounds end with only a state to retry with, as for any long task.
    for (let round = 0; done.resultType === 'input_required' && round < 30; round += 1) {
      expect(done).not.toHaveProperty('inputRequests');
      done = await mcp.call('tools/call', { ...args, requestState: done.requestState });
    }
    expect(done.content[0]).toEqual({ type: 'text', text: 'Answer (given in the MCP client): yes' });
    expect(tasksOfTool('ask_human').slice(-1)).toEqual([taskId]);
  });

  it("streams a call's own progress, and log messages only at or above the level the request set", async () => {
    const mcp = plainClient({});
    const args = { name: 'delay', arguments: { seconds: 1.2 } };
    let progressed = await mcp.request('tools/call', args, { meta: { progressToken: 'p-1' } });
    expect(progressed.contentType).toMatch(/^text\/event-stream/);
    const notifications = [...progressed.notifications];
    // A round ends after MCP_ROUND_WAIT_MS: on a slow machine the task may outlast the first, and the retry follows it.
    while (progressed.body.result?.resultType === 'input_required') {
      progressed = await mcp.request('tools/call', { ...args, requestState: progressed.body.result.requestState }, { meta: { progressToken: 'p-1' } });
      notifications.push(...progressed.notifications);
    }
    expect(notifications.length).toBeGreaterThan(0);
    expect(notifications.every((message) => message.method === 'notifications/progress' && message.params.progressToken === 'p-1')).toBe(true);
    expect(progressed.body.result.content).toEqual([{ type: 'text', text: 'Waited 1.2 s.' }]);
    const logged = await mcp.request('tools/call', { name: 'fixture_log_every_level', arguments: {} }, { meta: { 'io.modelcontextprotocol/logLevel': 'warning' } });
    expect(logged.notifications.map((message) => message.params.level)).toEqual(['warning', 'error', 'critical', 'alert', 'emergency']);
    const silent = await mcp.request('tools/call', { name: 'fixture_log_every_level', arguments: {} });
    expect(silent.contentType).toMatch(/^application\/json/);
    expect(silent.notifications).toEqual([]);
  });

  it('takes a closed first request as its cancellation: the task it started is cancelled', async () => {
    const mcp = plainClient({});
    const before = tasksOfTool('delay').length;
    const controller = new AbortController();
    const { body, headers } = mcp.build('tools/call', { name: 'delay', arguments: { seconds: 30 } });
    const pending = mcp.post(body, headers, controller.signal).catch(() => undefined);
    await expect.poll(() => tasksOfTool('delay').length).toBe(before + 1);
    controller.abort();
    await pending;
    const [taskId] = tasksOfTool('delay').slice(-1);
    await expect.poll(() => taskRow(taskId)!.status, { timeout: 10_000 }).toBe('cancelled');
  });
});

describe('a client that takes only URL-mode elicitation', () => {
  const linkOnly = { elicitation: { url: {} } };
  const linkTo = (question: string, taskId: string) => ({
    method: 'elicitation/create',
    params: { mode: 'url', message: `${question} (answer it on the task's page in the dashboard)`, url: `${server.url}/tasks/${taskId}` },
  });

  it("is sent a link to the task's page built from APP_URL; its accept is no answer, and no later round sends the link again", async () => {
    // The client reaches the server by another name than APP_URL's (localhost), and forwarded headers name a third.
    const mcp = new ModernMcp(server.mcpUrl.replace('//localhost:', '//127.0.0.1:'), token, linkOnly);
    const forwarded = { headers: { 'X-Forwarded-Host': 'attacker.example', 'X-Forwarded-Proto': 'https' } };
    const args = { name: 'ask_human', arguments: { question: 'Rotate the keys?' } };
    const first = await mcp.call('tools/call', args, forwarded);
    const [taskId] = tasksOfTool('ask_human').slice(-1);
    expect(first).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    // 2026-07-28 has no elicitationId (nor notifications/elicitation/complete).
    expect(first.inputRequests).toEqual({ answer: linkTo('Rotate the keys?', taskId) });

    const second = await mcp.call('tools/call', { ...args, requestState: first.requestState, inputResponses: { answer: { action: 'accept' } } }, forwarded);
    expect(second).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    expect(second).not.toHaveProperty('inputRequests');
    expect(pendingInputs(taskId)).toHaveLength(1);
    const third = await mcp.call('tools/call', { ...args, requestState: second.requestState });
    expect(third).not.toHaveProperty('inputRequests');

    await answerInDashboard(server, 'ada@example.com', taskId, 'yes, today');
    const done = await mcp.call('tools/call', { ...args, requestState: third.requestState });
    expect(done.structuredContent).toEqual({ action: 'accept', answeredBy: 'dashboard', content: { answer: 'yes, today' } });
    expect(tasksOfTool('ask_human').slice(-1)).toEqual([taskId]);
  });

  it('lists the link in tasks/get for a client of the tasks extension, which answers only by declining', async () => {
    const mcp = new ModernMcp(server.mcpUrl, token, { ...linkOnly, extensions: { [tasksExtension]: {} } });
    const created = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Archive the project?' } });
    const task = await untilStatus(mcp, created.taskId, 'input_required');
    expect(task.inputRequests).toEqual({ answer: linkTo('Archive the project?', created.taskId) });
    expect(await mcp.call('tasks/update', { taskId: created.taskId, inputResponses: { answer: { action: 'accept' } } })).toMatchObject({ resultType: 'complete' });
    expect(pendingInputs(created.taskId)).toHaveLength(1);
    await mcp.call('tasks/update', { taskId: created.taskId, inputResponses: { answer: { action: 'decline' } } });
    const done = await untilStatus(mcp, created.taskId, 'completed');
    expect(done.result.structuredContent).toEqual({ action: 'decline', answeredBy: 'client' });
  });

  it('is sent the link once by the SDK 2.x client, which waits in rounds for the answer given on the page', async () => {
    const links: any[] = [];
    const { client, close } = await connectSdk2Client(server.mcpUrl, token, {
      name: 'sdk2-link-only',
      chooseEra: true,
      capabilities: linkOnly,
      elicit: async (params) => {
        links.push(params);
        return { action: 'accept' };
      },
    });
    try {
      const call = client.callTool({ name: 'ask_human', arguments: { question: 'Open it in the browser?' } }, { timeout: 60_000 });
      await expect.poll(() => links.length, { timeout: 20_000 }).toBe(1);
      const [taskId] = tasksOfTool('ask_human').slice(-1);
      expect(links[0]).toEqual(linkTo('Open it in the browser?', taskId).params);
      // A round or more passes with the link accepted and the person still on the page.
      await sleep(roundWaitMs * 1.5);
      await answerInDashboard(server, 'ada@example.com', taskId, 'opened');
      const result: any = await call;
      expect(result.structuredContent).toEqual({ action: 'accept', answeredBy: 'dashboard', content: { answer: 'opened' } });
      expect(links).toHaveLength(1);
    } finally {
      await close();
    }
  });
});

describe('the SDK 2.x client, choosing its era', () => {
  it('speaks 2026-07-28 with this server and gets ask_human answered by its own handler, in rounds', async () => {
    const asked: any[] = [];
    const { client, close } = await connectSdk2Client(server.mcpUrl, token, {
      name: 'sdk2-modern',
      chooseEra: true,
      elicit: async (params) => {
        asked.push(params);
        return { action: 'accept', content: { answer: 'from the SDK' } };
      },
    });
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(modernVersion);
      const result: any = await client.callTool({ name: 'ask_human', arguments: { question: 'Which era?' } });
      expect(result.content[0]).toEqual({ type: 'text', text: 'Answer (given in the MCP client): from the SDK' });
      expect(asked).toHaveLength(1);
      const [taskId] = tasksOfTool('ask_human').slice(-1);
      expect(taskRow(taskId)).toMatchObject({ client_name: 'sdk2-modern', protocol_version: modernVersion, status: 'completed' });
    } finally {
      await close();
    }
  });

  it('speaks 2026-07-28 without an elicitation handler, and waits in rounds while the person answers in the dashboard', async () => {
    const { client, close } = await connectSdk2Client(server.mcpUrl, token, { name: 'sdk2-modern-plain', chooseEra: true });
    try {
      const before = tasksOfTool('ask_human').length;
      const call = client.callTool({ name: 'ask_human', arguments: { question: 'Answer for the SDK?' } }, { timeout: 60_000 });
      await expect.poll(() => tasksOfTool('ask_human').length).toBe(before + 1);
      const [taskId] = tasksOfTool('ask_human').slice(-1);
      await answerInDashboard(server, 'ada@example.com', taskId, 'from the dashboard');
      const result: any = await call;
      expect(result.content[0]).toEqual({ type: 'text', text: 'Answer (given in the dashboard): from the dashboard' });
      expect(tasksOfTool('ask_human').length).toBe(before + 1);
    } finally {
      await close();
    }
  });
});
