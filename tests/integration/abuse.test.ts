import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawMcp } from '../helpers/mcp';
import { createToken, startServer, type TestServer } from '../helpers/server';

let server: TestServer;

beforeAll(async () => {
  server = await startServer({
    RATE_LIMIT_PER_TOKEN: '20',
    RATE_LIMIT_PER_USER: '30',
    RATE_LIMIT_TASK_OPERATIONS_PER_USER: '10',
    RATE_LIMIT_UNKNOWN_TASKS_PER_USER: '5',
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
  expect(reply!.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32029, data: { retryAfterSeconds: retryAfter } } });
  expect(reply!.body.error.message).toMatch(reason);
  expect(reply!.body.error.message).toContain(`retry after ${retryAfter} seconds`);
}

describe('rate limits', () => {
  it('refuses a token past its requests per minute with 429, Retry-After and a JSON-RPC error', async () => {
    const mcp = await session('token-limit@example.com');
    // initialize and notifications/initialized counted two of the twenty.
    const { accepted, reply } = await pingUntilRefused(mcp, 25);
    expect(accepted).toBe(18);
    expectTooManyRequests(reply, /access token sent too many requests/);
    const other = await session('token-limit@example.com', 'second');
    expect((await other.request('ping')).status).toBe(200);
  });

  it('counts every token of a user against the user limit', async () => {
    const first = await session('user-limit@example.com', 'one');
    const second = await session('user-limit@example.com', 'two');
    expect((await pingUntilRefused(first, 15)).accepted).toBe(15);
    // 4 requests opened the sessions and 15 pings went through: 11 remain for the user.
    const { accepted, reply } = await pingUntilRefused(second, 15);
    expect(accepted).toBe(11);
    expectTooManyRequests(reply, /account sent too many requests/);
    const someoneElse = await session('not-limited@example.com');
    expect((await someoneElse.request('ping')).status).toBe(200);
  });

  it('limits task operations on their own, leaving other requests through', async () => {
    const mcp = await session('task-ops@example.com');
    for (let sent = 0; sent < 10; sent += 1) expect((await mcp.request('tasks/list')).status).toBe(200);
    const refused = await mcp.request('tasks/list');
    expectTooManyRequests(refused, /too many task operations/);
    expect((await mcp.request('ping')).status).toBe(200);
    const created = await mcp.request('tools/call', { name: 'delay', arguments: { seconds: 0 }, task: {} });
    expectTooManyRequests(created, /too many task operations/);
  });

  it('slows down a user probing for task ids after a few unknown ones', async () => {
    const mcp = await session('prober@example.com');
    const task = await mcp.startDelayTask(0);
    for (let probe = 0; probe < 5; probe += 1) {
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
