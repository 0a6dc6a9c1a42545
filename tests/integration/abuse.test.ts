import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawMcp } from '../helpers/mcp';
import { ModernMcp } from '../helpers/modern';
import { createToken, revokeToken, startServer, type TestServer } from '../helpers/server';

let server: TestServer;
const limits = { perToken: 120, perUser: 180, taskOperations: 10, unknownTasks: 5, storedTasks: 5 };

beforeAll(async () => {
  server = await startServer({
    RATE_LIMIT_PER_TOKEN: String(limits.perToken),
    RATE_LIMIT_PER_USER: String(limits.perUser),
    RATE_LIMIT_TASK_OPERATIONS_PER_USER: String(limits.taskOperations),
    RATE_LIMIT_UNKNOWN_TASKS_PER_USER: String(limits.unknownTasks),
    TASK_MAX_STORED_PER_USER: String(limits.storedTasks),
    TASK_SWEEP_INTERVAL_MS: '300',
  });
});

afterAll(async () => {
  await server?.stop();
});

async function session(email: string, name = 'test'): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, createToken(server, email, name));
  await mcp.initialize();
  return mcp;
}

/** Sends pings until one is refused; returns how many got through and the refusal. */
async function pingUntilRefused(mcp: RawMcp, most: number) {
  for (let sent = 0; sent < most; sent += 1) {
    const reply = await mcp.request('ping');
    if (reply.status !== 200) return { accepted: sent, reply };
  }
  return { accepted: most, reply: undefined };
}

function expectTooManyRequests(reply: { status: number; headers: Headers; body: any } | undefined, reason: RegExp) {
  expect(reply?.status).toBe(429);
  const retryAfter = Number(reply!.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(reply!.body).toMatchObject({ jsonrpc: '2.0', error: { code: -31429, data: { retryAfterSeconds: retryAfter } } });
  expect(reply!.body.error.message).toMatch(reason);
  expect(reply!.body.error.message).toContain(`retry after ${retryAfter} seconds`);
}

describe('rate limits', () => {
  it('refuses a token past its requests per minute with 429, Retry-After and a JSON-RPC error', async () => {
    const mcp = await session('token-limit@example.com');
    // initialize and notifications/initialized counted two.
    const { accepted, reply } = await pingUntilRefused(mcp, limits.perToken + 5);
    expect(accepted).toBe(limits.perToken - 2);
    expectTooManyRequests(reply, /access token sent too many requests/);
    // The refusal answers the request it refuses, by its id (the body was read before the limit was checked).
    const refused = await mcp.post({ jsonrpc: '2.0', id: 'past-the-limit', method: 'ping' });
    const refusal = { status: refused.status, headers: refused.headers, body: await refused.json() };
    expectTooManyRequests(refusal, /access token sent too many requests/);
    expect(refusal.body.id).toBe('past-the-limit');
    const other = await session('token-limit@example.com', 'second');
    expect((await other.request('ping')).status).toBe(200);
  });

  it('counts every token of a user against the user limit', async () => {
    const first = await session('user-limit@example.com', 'one');
    const second = await session('user-limit@example.com', 'two');
    expect((await pingUntilRefused(first, 100)).accepted).toBe(100);
    // 4 requests opened the sessions and 100 pings went through.
    const { accepted, reply } = await pingUntilRefused(second, 100);
    expect(accepted).toBe(limits.perUser - 104);
    expectTooManyRequests(reply, /account sent too many requests/);
    const someoneElse = await session('not-limited@example.com');
    expect((await someoneElse.request('ping')).status).toBe(200);
  });

  it('limits task operations on their own, leaving other requests through', async () => {
    const mcp = await session('task-ops@example.com');
    for (let sent = 0; sent < limits.taskOperations; sent += 1) expect((await mcp.request('tasks/list')).status).toBe(200);
    const refused = await mcp.request('tasks/list');
    expectTooManyRequests(refused, /too many task operations/);
    expect((await mcp.request('ping')).status).toBe(200);
    const created = await mcp.request('tools/call', { name: 'delay', arguments: { seconds: 0 }, task: {} });
    expectTooManyRequests(created, /too many task operations/);
  });

  it('slows down a user probing for task ids after a few unknown ones', async () => {
    const mcp = await session('prober@example.com');
    const task = await mcp.startDelayTask(0);
    for (let probe = 0; probe < limits.unknownTasks; probe += 1) {
      const reply = await mcp.request('tasks/get', { taskId: crypto.randomUUID() });
      expect(reply.status).toBe(200);
      expect(reply.body.error.code).toBe(-32602);
    }
    expectTooManyRequests(await mcp.request('tasks/get', { taskId: crypto.randomUUID() }), /tasks that do not exist/);
    expectTooManyRequests(await mcp.request('tasks/get', { taskId: task.taskId }), /tasks that do not exist/);
    expect((await mcp.request('ping')).status).toBe(200);
    const neighbour = await session('neighbour@example.com');
    expect((await neighbour.request('tasks/get', { taskId: crypto.randomUUID() })).body.error.code).toBe(-32602);
  });

  it('counts the tools for clients without tasks as task operations, and their unknown task ids as probes', async () => {
    const prober = await session('tool-prober@example.com');
    for (let probe = 0; probe < limits.unknownTasks; probe += 1) {
      const reply = await prober.request('tools/call', { name: 'task_status', arguments: { taskId: crypto.randomUUID() } });
      expect(reply.body.result).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/^Unknown task: /) }] });
    }
    expectTooManyRequests(await prober.request('tools/call', { name: 'task_result', arguments: { taskId: crypto.randomUUID() } }), /tasks that do not exist/);
    // The probing tool calls count against the tasks/* methods too, and the other way round.
    expectTooManyRequests(await prober.request('tasks/get', { taskId: crypto.randomUUID() }), /tasks that do not exist/);
    expect((await prober.request('ping')).status).toBe(200);

    const busy = await session('tool-ops@example.com');
    for (let sent = 0; sent < limits.taskOperations; sent += 1) expect((await busy.request('tools/call', { name: 'task_list', arguments: {} })).status).toBe(200);
    expectTooManyRequests(await busy.request('tools/call', { name: 'task_list', arguments: {} }), /too many task operations/);
    expectTooManyRequests(await busy.request('tasks/list'), /too many task operations/);
    expect((await busy.request('tools/call', { name: 'echo', arguments: { text: 'still here' } })).status).toBe(200);
  });
});

/** Polls until check() holds, failing after the timeout. */
async function eventually(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('answers built to hurt', () => {
  // Before answers were checked by capped zod schemas, this one answer held the event loop for minutes.
  it('refuses a near-1 MB answer made to make an email check backtrack, and the question stays open', { timeout: 15_000 }, async () => {
    const mcp = new RawMcp(server.mcpUrl, createToken(server, 'redos@example.com'));
    await mcp.initialize(undefined, { elicitation: {} });
    const stream = await mcp.openGetStream();
    const { task } = await mcp.call('tools/call', {
      name: 'ask_human',
      arguments: { question: 'Your email?', fields: { email: { type: 'string', format: 'email' } } },
      task: {},
    });
    const question = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
    const hostile = await mcp.post({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { email: `a@${'.'.repeat(1_000_000)} ` } } });
    expect(hostile.status).toBe(400);
    expect((await hostile.json()).error).toMatchObject({ code: -32602, message: expect.stringContaining('content is larger than') });
    expect((await mcp.call('tasks/get', { taskId: task.taskId })).status).toBe('input_required');
    const fine = await mcp.post({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { email: 'ada@example.com' } } });
    expect(fine.status).toBe(202);
    expect((await mcp.call('tasks/result', { taskId: task.taskId })).structuredContent.content).toEqual({ email: 'ada@example.com' });
    await stream.close();
  });
});

describe('storage bounds', () => {
  const sessionCount = () => (server.db().prepare('SELECT count(*) AS n FROM mcp_sessions').get() as { n: number }).n;
  const initializeWith = (mcp: RawMcp, clientInfo: unknown, capabilities: unknown = {}) =>
    mcp.request('initialize', { protocolVersion: '2025-11-25', capabilities, clientInfo });

  it('refuses to store oversized client information at initialize, creating no session', async () => {
    const mcp = new RawMcp(server.mcpUrl, createToken(server, 'big-client@example.com'));
    const before = sessionCount();
    const hugeCapabilities = await initializeWith(mcp, { name: 'x', version: '1' }, { experimental: { blob: 'b'.repeat(20_000) } });
    expect(hugeCapabilities.body.error).toMatchObject({ code: -32602 });
    expect(hugeCapabilities.body.error.message).toContain('capabilities');
    expect(hugeCapabilities.headers.get('mcp-session-id')).toBeNull();
    const longName = await initializeWith(mcp, { name: 'n'.repeat(300), version: '1' });
    expect(longName.body.error).toMatchObject({ code: -32602 });
    expect(longName.body.error.message).toContain('clientInfo.name');
    expect(sessionCount()).toBe(before);
    const fine = await initializeWith(mcp, { name: 'n'.repeat(256), version: '1' }, { experimental: { blob: 'b'.repeat(10_000) } });
    expect(fine.body.result.protocolVersion).toBe('2025-11-25');
    expect(sessionCount()).toBe(before + 1);
  });

  it('refuses a client name or version that cannot be kept and shown as text, in both eras, storing nothing', async () => {
    const token = createToken(server, 'odd-client@example.com');
    const mcp = new RawMcp(server.mcpUrl, token);
    const tasksOf = () => (server.db().prepare("SELECT count(*) AS n FROM tasks t JOIN users u ON u.id = t.user_id WHERE u.email = 'odd-client@example.com'").get() as { n: number }).n;
    const before = sessionCount();
    // U+0000 cannot be stored in PostgreSQL's text at all; a lone surrogate cannot go into its JSON.
    for (const [clientInfo, field, why] of [
      [{ name: 'a\u0000b', version: '1' }, 'clientInfo.name', 'control characters'],
      [{ name: 'x', version: '1\n2' }, 'clientInfo.version', 'control characters'],
      [{ name: '\uD800', version: '1' }, 'clientInfo.name', 'lone surrogate'],
      [{ name: 'x', version: 'v\uDFFF' }, 'clientInfo.version', 'lone surrogate'],
    ] as const) {
      const refused = await initializeWith(mcp, clientInfo);
      expect(refused.status).toBe(200);
      expect(refused.body.error).toMatchObject({ code: -32602, message: expect.stringContaining(field) });
      expect(refused.body.error.message).toContain(why);
      expect(refused.headers.get('mcp-session-id')).toBeNull();

      const modern = new ModernMcp(server.mcpUrl, token, {}, clientInfo);
      const call = await modern.request('tools/call', { name: 'delay', arguments: { seconds: 0 }, task: {} });
      expect(call.status).toBe(400);
      expect(call.body.error).toMatchObject({ code: -32602, message: expect.stringContaining(`_meta.io.modelcontextprotocol/clientInfo`) });
      expect(call.body.error.message).toContain(why);
    }
    expect(sessionCount()).toBe(before);
    expect(tasksOf()).toBe(0);
    // Names beyond ASCII are welcome: an emoji (a surrogate pair) and accents are kept as given.
    const fine = await initializeWith(mcp, { name: 'Zoë 🤖', version: '1.0' });
    expect(fine.body.result.protocolVersion).toBe('2025-11-25');
    await new ModernMcp(server.mcpUrl, token, {}, { name: 'Zoë 🤖', version: '1.0' }).call('tools/call', { name: 'delay', arguments: { seconds: 0 }, task: {} });
    expect(server.db().prepare("SELECT client_name FROM tasks t JOIN users u ON u.id = t.user_id WHERE u.email = 'odd-client@example.com'").all()).toEqual([{ client_name: 'Zoë 🤖' }]);
  });

  it('deletes the rows of ended sessions in the sweep', async () => {
    const mcp = await session('ends@example.com');
    const sessionId = mcp.sessionId!;
    const row = () => server.db().prepare('SELECT ended_at FROM mcp_sessions WHERE id = ?').get(sessionId);
    expect(row()).toBeDefined();
    const ended = await fetch(server.mcpUrl, { method: 'DELETE', headers: mcp.headers() });
    expect(ended.status).toBe(200);
    await eventually(() => row() === undefined, 'the ended session is deleted');
    expect((await mcp.request('ping')).status).toBe(404);
  });

  it('caps the tasks one user may have stored', async () => {
    const mcp = await session('hoarder@example.com');
    for (let created = 0; created < limits.storedTasks; created += 1) await mcp.startDelayTask(0);
    const refused = await mcp.request('tools/call', { name: 'delay', arguments: { seconds: 0 }, task: {} });
    expect(refused.body.error).toMatchObject({ code: -32600 });
    expect(refused.body.error.message).toContain(`Too many stored tasks: you have ${limits.storedTasks}`);
    const stored = server.db().prepare("SELECT count(*) AS n FROM tasks t JOIN users u ON u.id = t.user_id WHERE u.email = 'hoarder@example.com'").get() as { n: number };
    expect(stored.n).toBe(limits.storedTasks);
  });

  it('gives the places of expired tasks back once they are swept', async () => {
    const mcp = await session('short-lived@example.com');
    const create = () => mcp.request('tools/call', { name: 'delay', arguments: { seconds: 0 }, task: { ttl: 1000 } });
    for (let created = 0; created < limits.storedTasks; created += 1) expect((await create()).body.result.task.taskId).toBeTruthy();
    expect((await create()).body.error.message).toContain('Too many stored tasks');
    // Task operations are rate-limited here (10 a minute): wait on the database, then create once.
    const stored = () => (server.db().prepare("SELECT count(*) AS n FROM tasks t JOIN users u ON u.id = t.user_id WHERE u.email = 'short-lived@example.com'").get() as { n: number }).n;
    const deadline = Date.now() + 15_000;
    while (stored() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(stored()).toBe(0);
    const reply = await create();
    expect(reply.body.result?.task?.taskId).toBeTruthy();
  });

  it('keeps no arguments of a task whose arguments do not fit the tool', async () => {
    const mcp = await session('bad-args@example.com');
    const bad = await mcp.startDelayTask(0, { arguments: { seconds: 'x'.repeat(100_000) } });
    const good = await mcp.startDelayTask(0, { arguments: { seconds: 0, fail: false } });
    const result = await mcp.call('tasks/result', { taskId: bad.taskId });
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toContain('Invalid arguments');
    const argumentsOf = (taskId: string) => (server.db().prepare('SELECT arguments FROM tasks WHERE id = ?').get(taskId) as { arguments: string }).arguments;
    expect(JSON.parse(argumentsOf(bad.taskId))).toEqual({});
    expect(JSON.parse(argumentsOf(good.taskId))).toEqual({ seconds: 0, fail: false });
  });

  it('bounds the size of a 2025-03-26 batch', async () => {
    const mcp = new RawMcp(server.mcpUrl, createToken(server, 'batcher@example.com'));
    await mcp.initialize('2025-03-26');
    const pings = (count: number) => Array.from({ length: count }, (_, index) => ({ jsonrpc: '2.0', id: index + 1, method: 'ping' }));
    const tooMany = await mcp.post(pings(51), { 'MCP-Protocol-Version': '2025-03-26' });
    expect(tooMany.status).toBe(400);
    expect((await tooMany.json()).error).toMatchObject({ code: -32600, message: expect.stringContaining('at most 50 messages') });
    const fine = await mcp.post(pings(50), { 'MCP-Protocol-Version': '2025-03-26' });
    expect(fine.status).toBe(200);
    expect(await fine.json()).toHaveLength(50);
  });
});

/** The JSON lines the server has logged so far. */
function logLines(): Record<string, any>[] {
  return server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line)];
      } catch {
        return [];
      }
    });
}

/** Waits until a logged line matches; the log is written as the server answers, so it may trail a reply. */
async function logLine(matches: (line: Record<string, any>) => boolean, timeoutMs = 10_000): Promise<Record<string, any>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = logLines().find(matches);
    if (found) return found;
    if (Date.now() > deadline) throw new Error('no such log line');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('request log', () => {
  it('logs one line per request with who, what and how it ended, and never a token or an argument', async () => {
    const token = createToken(server, 'logged@example.com');
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize();
    const task = await mcp.startDelayTask(0);
    await mcp.call('tasks/result', { taskId: task.taskId });
    await mcp.call('tasks/get', { taskId: task.taskId });
    await mcp.call('tools/call', { name: 'echo', arguments: { text: 'an-argument-nobody-may-log' } });

    const created = await logLine((line) => line.event === 'task.created' && line.taskId === task.taskId);
    expect(created).toMatchObject({ msg: 'mcp request', method: 'tools/call', tool: 'delay', status: 200, client: 'raw-test/1.0.0', httpMethod: 'POST' });
    expect(created.userId).toEqual(expect.any(String));
    expect(created.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number.isNaN(Date.parse(created.time))).toBe(false);
    expect(created.durationMs).toEqual(expect.any(Number));
    const retrieved = await logLine((line) => line.method === 'tasks/get' && line.taskId === task.taskId);
    expect(retrieved).toMatchObject({ event: 'task.retrieved', userId: created.userId });
    await logLine((line) => line.event === 'task.completed' && line.taskId === task.taskId && line.userId === created.userId);
    await logLine((line) => line.method === 'tools/call' && line.tool === 'echo');
    expect(server.output()).not.toContain(token);
    expect(server.output()).not.toContain('an-argument-nobody-may-log');
  });

  it('logs cancellations and unknown task ids with their error', async () => {
    const mcp = await session('cancels@example.com');
    const task = await mcp.startDelayTask(60);
    await mcp.call('tasks/cancel', { taskId: task.taskId });
    await logLine((line) => line.event === 'task.cancel' && line.taskId === task.taskId);
    await logLine((line) => line.event === 'task.cancelled' && line.taskId === task.taskId);
    const unknown = crypto.randomUUID();
    await mcp.request('tasks/get', { taskId: unknown });
    const refused = await logLine((line) => line.taskId === unknown);
    expect(refused).toMatchObject({ method: 'tasks/get', rpcError: -32602, status: 200 });
    expect(refused.event).toBeUndefined();
  });

  it('is left out below its level (LOG_LEVEL=warn), and the server answers all the same', async () => {
    const quiet = await startServer({ LOG_LEVEL: 'warn' });
    try {
      const mcp = new RawMcp(quiet.mcpUrl, createToken(quiet, 'quiet@example.com'));
      await mcp.initialize();
      const task = await mcp.startDelayTask(0);
      expect((await mcp.call('tasks/result', { taskId: task.taskId })).isError).toBeFalsy();
      expect((await mcp.request('ping')).status).toBe(200);
      // Longer than the log's flush interval (200 ms) twice over.
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(quiet.output()).not.toContain('"msg":"mcp request"');
      expect(quiet.output()).not.toContain('"msg":"task ended"');
    } finally {
      await quiet.stop();
    }
  });

  it('cannot be made to write a forged line by a method name or id', async () => {
    const mcp = await session('forger@example.com');
    const forged = '\n{"level":30,"msg":"mcp request","forged":true}\n';
    await (await mcp.post({ jsonrpc: '2.0', id: `x${forged}`, method: `tools/list${forged}` })).text();
    await logLine((line) => typeof line.method === 'string' && line.method.startsWith('tools/list\n'));
    expect(logLines().some((line) => line.forged === true)).toBe(false);
    const long = 'm'.repeat(5000);
    await (await mcp.post({ jsonrpc: '2.0', id: 1, method: long })).text();
    const clipped = await logLine((line) => typeof line.method === 'string' && line.method.startsWith('mmm'));
    expect(clipped.method.length).toBeLessThan(300);
  });
});

describe('token:revoke', () => {
  it('reads the token from standard input, so it shows neither in ps nor in the shell history', async () => {
    const token = createToken(server, 'revoker@example.com');
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize();
    const revoked = revokeToken(server, token, 'stdin');
    expect(revoked).toMatchObject({ status: 0 });
    expect(revoked.stderr).toContain('Token revoked.');
    expect((await mcp.request('ping')).status).toBe(401);
    expect(revokeToken(server, token, 'stdin').status).not.toBe(0);
  });

  it('still takes --token, and refuses an empty standard input', async () => {
    const token = createToken(server, 'revoker@example.com', 'argument');
    expect(revokeToken(server, token, 'argument').status).toBe(0);
    const empty = revokeToken(server, '', 'stdin');
    expect(empty.status).toBe(2);
    expect(empty.stderr).toContain('No token given');
  });
});
