import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateMessageRequestSchema, CreateTaskResultSchema, ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSdk2Client, connectSdkClient, sleep, SseReader } from '../helpers/mcp';
import { ModernMcp } from '../helpers/modern';
import { createToken, startServer, type TestServer } from '../helpers/server';
import { everythingOverStdio, pidsMarked, startChangingUpstream, startEverythingOverHttp, startMisbehavingUpstream, writeServersFile } from '../helpers/upstreams';

/**
 * The servers people already run, as tasks: @modelcontextprotocol/server-everything (which nobody here
 * wrote) over stdio and, as a process of its own, over Streamable HTTP, behind the built server.
 */
let server: TestServer;
let upstreamHttp: Awaited<ReturnType<typeof startEverythingOverHttp>>;
let changing: Awaited<ReturnType<typeof startChangingUpstream>>;
let misbehaving: Awaited<ReturnType<typeof startMisbehavingUpstream>>;
let token: string;
let outsiderToken: string;
let serversFile: string;

beforeAll(async () => {
  upstreamHttp = await startEverythingOverHttp();
  changing = await startChangingUpstream();
  misbehaving = await startMisbehavingUpstream();
  serversFile = writeServersFile({
    everything: everythingOverStdio('gateway-stdio', { env: { UPSTREAM_MARK: 'gateway-stdio', GREETING: '${UPSTREAM_GREETING}' }, resumable: ['get-sum'] }),
    remote: { url: upstreamHttp.url },
    changing: { url: changing.url, type: 'http' },
    bad: { url: misbehaving.url, timeoutMs: 3000, maxConcurrent: 1 },
    staff: everythingOverStdio('gateway-staff', { users: ['@staff.example'], toolPrefix: 'staffonly', resumable: ['trigger-long-running-operation'] }),
    // Other clients' own keys sit in the same entries; a disabled entry is left out.
    off: { command: 'false', disabled: true },
  });
  server = await startServer({ MCP_SERVERS_FILE: serversFile, UPSTREAM_GREETING: 'hello from the file' });
  token = createToken(server, 'ada@staff.example');
  outsiderToken = createToken(server, 'bob@elsewhere.example');
  await untilTools(token, ['everything__echo', 'remote__echo', 'staffonly__echo', 'changing__add_tool', 'bad__silent']);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await upstreamHttp?.stop();
  await changing?.close();
  await misbehaving?.close();
  if (serversFile) fs.rmSync(path.dirname(serversFile), { recursive: true, force: true });
});

/** Waits until a person's tools/list holds these tools (the servers come up beside the server). */
async function untilTools(bearer: string, names: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { client, close } = await connectSdkClient(server.mcpUrl, bearer);
    try {
      const listed = new Set((await client.listTools()).tools.map((tool) => tool.name));
      if (names.every((name) => listed.has(name))) return;
    } finally {
      await close();
    }
    if (Date.now() > deadline) throw new Error(`tools ${names.join(', ')} were not listed in time`);
    await sleep(250);
  }
}

/** Starts a call as a task of ours (task-augmented tools/call); resolves with our task's id. */
async function startTask(name: string, args: Record<string, unknown>): Promise<string> {
  const { client, close } = await connectSdkClient(server.mcpUrl, token);
  try {
    const created = await client.request({ method: 'tools/call', params: { name, arguments: args, task: {} } }, CreateTaskResultSchema);
    return created.task.taskId;
  } finally {
    await close();
  }
}

const taskRow = (id: string) =>
  server.db().prepare('SELECT status, status_message AS "statusMessage", attempt, upstream_task_id AS "upstreamTaskId", upstream_session_id AS "upstreamSessionId" FROM tasks WHERE id = ?').get(id) as {
    status: string;
    statusMessage: string | null;
    attempt: number;
    upstreamTaskId: string | null;
    upstreamSessionId: string | null;
  };

const taskRowsOf = (tool: string) =>
  server.db().prepare('SELECT id, status, user_id AS "userId", upstream_task_id AS "upstreamTaskId", status_message AS "statusMessage" FROM tasks WHERE tool_name = ? ORDER BY created_at').all(tool) as Array<{
    id: string;
    status: string;
    userId: string;
    upstreamTaskId: string | null;
    statusMessage: string | null;
  }>;

const textOf = (result: unknown) => ((result as { content: unknown }).content as Array<{ type: string; text?: string }>).filter((block) => block.type === 'text').map((block) => block.text).join('\n');

describe('the tools of the servers file', () => {
  it("are listed as <prefix>__<tool> with the upstream's descriptions, schemas and annotations, each able to run as a task", async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const tools = (await client.listTools()).tools;
      const echo = tools.find((tool) => tool.name === 'everything__echo')!;
      expect(echo.description).toMatch(/echo/i);
      expect(echo.inputSchema).toMatchObject({ type: 'object', properties: { message: { type: 'string' } } });
      expect(echo.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
      expect(echo.execution).toEqual({ taskSupport: 'optional' });
      const structured = tools.find((tool) => tool.name === 'everything__get-structured-content')!;
      // Its own schema, the first choice of one that also admits the early answer a client without tasks may get.
      expect((structured.outputSchema as unknown as { anyOf: unknown[] }).anyOf[0]).toMatchObject({ type: 'object', properties: { temperature: { type: 'number' } } });
      // Upstream runs it only as a task; here every client may call it.
      expect(tools.find((tool) => tool.name === 'everything__simulate-research-query')?.execution).toEqual({ taskSupport: 'optional' });
      expect(tools.some((tool) => tool.name.startsWith('off__'))).toBe(false);
      expect(tools.find((tool) => tool.name === 'delay')).toBeDefined();
    } finally {
      await close();
    }
  });

  it("are hidden from a person the entry does not admit, and calling one is an unknown tool", async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, outsiderToken);
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toContain('everything__echo');
      expect(names.some((name) => name.startsWith('staffonly__'))).toBe(false);
      await expect(client.callTool({ name: 'staffonly__echo', arguments: { message: 'hi' } })).rejects.toThrow(/Unknown tool: staffonly__echo/);
      expect(taskRowsOf('staffonly__echo')).toEqual([]);
    } finally {
      await close();
    }
  });

  it("run a plain call as a durable task of the caller's, answered with the upstream's result", async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const result = await client.callTool({ name: 'everything__echo', arguments: { message: 'through the gateway' } });
      expect(result.content).toEqual([{ type: 'text', text: 'Echo: through the gateway' }]);
      const rows = taskRowsOf('everything__echo');
      expect(rows).toHaveLength(1);
      expect(rows[0].status).toBe('completed');
      const owner = server.db().prepare('SELECT email FROM users WHERE id = ?').get(rows[0].userId) as { email: string };
      expect(owner.email).toBe('ada@staff.example');
    } finally {
      await close();
    }
  });

  it("relay the upstream's progress to the client", async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const progress: number[] = [];
      const result = await client.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 2, steps: 4 } }, CallToolResultSchema, {
        onprogress: (report) => progress.push(report.progress),
      });
      expect(textOf(result)).toMatch(/Long running operation completed\. Duration: 2 seconds, Steps: 4\./);
      // The upstream's last report may cross its result; the earlier ones arrive in order.
      expect(progress.length).toBeGreaterThanOrEqual(2);
      expect(progress).toEqual([...progress].sort((a, b) => a - b));
      expect(progress[0]).toBe(1);
    } finally {
      await close();
    }
  });

  it("relay the upstream's question to the client, whose answer goes back upstream", async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token, { capabilities: { elicitation: { form: {} } } });
    try {
      const asked: string[] = [];
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(String(request.params.message));
        return { action: 'accept', content: { name: 'Ada Lovelace' } };
      });
      const result = await client.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} });
      expect(asked).toEqual(['Please provide inputs for the following fields:']);
      expect(textOf(result)).toContain('- Name: Ada Lovelace');
    } finally {
      await close();
    }
  });

  it("relay the upstream's sampling request to a client that samples", async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token, { capabilities: { sampling: {} } });
    try {
      let prompt = '';
      client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
        prompt = JSON.stringify(request.params.messages);
        return { role: 'assistant', model: 'test-model', stopReason: 'endTurn', content: { type: 'text', text: 'sampled by the client' } };
      });
      const result = await client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'say hi', maxTokens: 20 } });
      expect(prompt).toContain('say hi');
      expect(textOf(result)).toContain('sampled by the client');
    } finally {
      await close();
    }
  });

  it("refuse upstream a sampling request the calling client cannot answer, at once", async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const result = await client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'say hi', maxTokens: 20 } }, CallToolResultSchema, { timeout: 20_000 });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain('the client of this task cannot sample');
    } finally {
      await close();
    }
  });

  it('pass structured content and images through', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const weather = await client.callTool({ name: 'everything__get-structured-content', arguments: { location: 'Chicago' } });
      expect(weather.structuredContent).toMatchObject({ temperature: expect.any(Number), conditions: expect.any(String), humidity: expect.any(Number) });
      const image = await client.callTool({ name: 'everything__get-tiny-image', arguments: {} });
      const block = (image.content as Array<Record<string, unknown>>).find((item) => item.type === 'image')!;
      expect(block.mimeType).toBe('image/png');
      expect(Buffer.from(String(block.data), 'base64').subarray(1, 4).toString()).toBe('PNG');
    } finally {
      await close();
    }
  });

  it("end failed with the upstream's words when it refuses the arguments", async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const result = await client.callTool({ name: 'everything__get-sum', arguments: { a: 'one', b: 2 } });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/a/);
      expect(taskRowsOf('everything__get-sum').at(-1)?.status).toBe('failed');
    } finally {
      await close();
    }
  });

  it('give a stdio server a minimal environment, with its entry\'s variables read from ours, never our secrets', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const result = await client.callTool({ name: 'everything__get-env', arguments: {} });
      const env = JSON.parse(textOf(result)) as Record<string, string>;
      expect(env.GREETING).toBe('hello from the file');
      expect(env.PATH).toBeTruthy();
      for (const secret of ['AUTH_SECRET', 'NEXTAUTH_SECRET', 'DATABASE_URL', 'DATABASE_PATH', 'MCP_SERVERS_FILE', 'UPSTREAM_GREETING', 'PORT']) expect(env).not.toHaveProperty(secret);
    } finally {
      await close();
    }
  });
});

describe('an upstream that misbehaves', () => {
  it('gives each call a clear failure: garbage, too much, an error, or no answer at all', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const call = (name: string) => client.callTool({ name: `bad__${name}`, arguments: {} }, CallToolResultSchema, { timeout: 30_000 });
      const garbage = await call('garbage');
      expect(garbage.isError).toBe(true);
      expect(textOf(garbage)).toMatch(/^Tool bad__garbage failed: bad did not complete the call: .*content/);
      const huge = await call('huge');
      expect(textOf(huge)).toMatch(/bad did not complete the call: its result is \d+ bytes, more than the 4194304 a task's result may hold/);
      const broken = await call('error');
      expect(textOf(broken)).toContain('the upstream broke');
      // One call at a time: a second waits for the slot, and says so.
      const holding = await startTask('bad__silent', {});
      const waiting = await startTask('bad__error', {});
      await expect.poll(() => taskRow(waiting).statusMessage, { timeout: 5_000 }).toBe('Waiting for a free slot on bad');
      await expect.poll(() => taskRow(waiting).status, { timeout: 10_000 }).toBe('failed');
      expect(taskRow(holding).status).toBe('failed');
      const started = Date.now();
      const silent = await call('silent');
      expect(textOf(silent)).toMatch(/bad did not complete the call: .*timed out/i);
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
      const rows = ['garbage', 'huge', 'error', 'silent'].map((name) => taskRowsOf(`bad__${name}`).at(-1)?.status);
      expect(rows).toEqual(['failed', 'failed', 'failed', 'failed']);
    } finally {
      await close();
    }
  }, 60_000);
});

describe('an upstream whose words cannot be stored as they are', () => {
  it('has its progress and failure kept with U+FFFD for what the database cannot hold, the task ended, never stuck', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const progress: Array<string | undefined> = [];
      const failed = await client.callTool({ name: 'bad__unstorable', arguments: {} }, CallToolResultSchema, { timeout: 30_000, onprogress: (event) => progress.push(event.message) });
      expect(failed.isError).toBe(true);
      // The result is kept exactly, as JSON; the words kept as text have U+FFFD in their place, on either database.
      expect(textOf(failed)).toBe('nul \u0000 and a lone \uD800 surrogate');
      expect(progress.length).toBeGreaterThan(0);
      expect(new Set(progress)).toEqual(new Set(['nul \uFFFD and a lone \uFFFD surrogate']));
      const [row] = taskRowsOf('bad__unstorable');
      expect(row).toMatchObject({ status: 'failed', statusMessage: 'Tool execution failed: nul \uFFFD and a lone \uFFFD surrogate' });
      expect(server.db().prepare('SELECT progress_message AS m FROM tasks WHERE id = ?').get(row.id)).toEqual({ m: 'nul \uFFFD and a lone \uFFFD surrogate' });
      const broken = await client.callTool({ name: 'bad__unstorable_error', arguments: {} }, CallToolResultSchema, { timeout: 30_000 });
      expect(textOf(broken)).toContain('nul');
      expect(taskRowsOf('bad__unstorable_error')[0]).toMatchObject({ status: 'failed', statusMessage: expect.stringContaining('nul \uFFFD and a lone \uFFFD surrogate') });
    } finally {
      await close();
    }
  }, 60_000);
});

describe("an upstream's list of tools", () => {
  it('changing is passed on to a session with its stream open, and to a 2026-07-28 subscription', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    const modern = new ModernMcp(server.mcpUrl, token);
    const built = modern.build('subscriptions/listen', { notifications: { toolsListChanged: true } });
    const controller = new AbortController();
    try {
      expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
      let told = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => void (told += 1));
      const subscription = new SseReader(await modern.post(built.body, built.headers, controller.signal));
      expect(await subscription.nextMessage()).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true } } });
      // The SDK client opens its stream once initialized; give it a moment to be listening.
      await sleep(500);
      const added = await client.callTool({ name: 'changing__add_tool', arguments: {} });
      const name = `changing__${textOf(added)}`;
      expect(await subscription.nextMessage()).toMatchObject({ method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': built.id } } });
      const deadline = Date.now() + 10_000;
      while (told === 0) {
        if (Date.now() > deadline) throw new Error('the session was not told');
        await sleep(50);
      }
      const listed = (await client.listTools()).tools.find((tool) => tool.name === name);
      expect(listed?.description).toMatch(/^Added tool number \d+$/);
      expect(await client.callTool({ name, arguments: {} })).toMatchObject({ content: [{ type: 'text', text: `I am ${name.slice('changing__'.length)}` }] });
    } finally {
      controller.abort();
      await close();
    }
  });
});

describe('a tool that upstream runs only as a task', () => {
  it('works from an SDK 2.x client without tasks, the upstream task noted with ours', async () => {
    const { client, close } = await connectSdk2Client(server.mcpUrl, token);
    try {
      const result = await client.callTool({ name: 'everything__simulate-research-query', arguments: { topic: 'tides' } });
      expect(textOf(result)).toContain('# Research Report: tides');
      // The upstream's task is not the client's to know of.
      expect(JSON.stringify(result)).not.toContain('related-task');
      const row = taskRowsOf('everything__simulate-research-query').at(-1)!;
      expect(row.status).toBe('completed');
      expect(row.upstreamTaskId).toMatch(/^[0-9a-f]{32}$/);
    } finally {
      await close();
    }
  });

  it('runs as a task of ours for an SDK 1.x task client', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      await client.listTools();
      let taskId = '';
      let report = '';
      for await (const message of client.experimental.tasks.callToolStream({ name: 'remote__simulate-research-query', arguments: { topic: 'comets' } }, CallToolResultSchema, { task: {} })) {
        if (message.type === 'taskCreated') taskId = message.task.taskId;
        if (message.type === 'result') report = textOf(message.result);
        if (message.type === 'error') throw message.error;
      }
      expect(report).toContain('# Research Report: comets');
      const row = taskRowsOf('remote__simulate-research-query').find((candidate) => candidate.id === taskId)!;
      expect(row.status).toBe('completed');
      expect(row.upstreamTaskId).not.toBe(taskId);
    } finally {
      await close();
    }
  });

  it("is answered with the upstream task's report after the gateway is killed with -9 while it runs (Streamable HTTP); a stdio call is failed saying so, or called again when resumable", async () => {
    const lasting = await startTask('everything__trigger-long-running-operation', { duration: 30, steps: 30 });
    const again = await startTask('staffonly__trigger-long-running-operation', { duration: 4, steps: 4 });
    const taskId = await startTask('remote__simulate-research-query', { topic: 'glaciers' });
    await expect.poll(() => taskRow(taskId).upstreamTaskId, { timeout: 10_000 }).toMatch(/^[0-9a-f]{32}$/);
    expect(taskRow(taskId).upstreamSessionId).toBeTruthy();
    expect(taskRow(lasting).status).toBe('working');
    expect(taskRow(again).status).toBe('working');
    await server.kill9();
    await server.restart();
    // Not called again: it may or may not have done its work upstream.
    await expect.poll(() => taskRow(lasting).status, { timeout: 30_000 }).toBe('failed');
    expect(taskRow(lasting).statusMessage).toBe('Interrupted by a restart; it may or may not have completed upstream on everything.');
    // Listed as safe to call again: it is.
    await expect.poll(() => taskRow(again).status, { timeout: 30_000 }).toBe('completed');
    expect(taskRow(again).attempt).toBe(2);
    const after = await connectSdkClient(server.mcpUrl, token);
    try {
      const result = await after.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 60_000 });
      expect(textOf(result)).toContain('# Research Report: glaciers');
      expect(taskRowsOf('remote__simulate-research-query').find((row) => row.id === taskId)?.status).toBe('completed');
    } finally {
      await after.close();
    }
    await untilTools(token, ['everything__echo', 'remote__echo']);
  }, 120_000);
});

describe('cancelling a task', () => {
  it('cancels the upstream task doing its work', async () => {
    const taskId = await startTask('remote__simulate-research-query', { topic: 'cancelled' });
    await expect.poll(() => taskRow(taskId).upstreamTaskId, { timeout: 10_000 }).toMatch(/^[0-9a-f]{32}$/);
    const { upstreamTaskId, upstreamSessionId } = taskRow(taskId);
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      await client.experimental.tasks.cancelTask(taskId);
    } finally {
      await close();
    }
    // Asked of the upstream itself, in the session the task belongs to.
    const direct = new Client({ name: 'direct', version: '1.0.0' });
    await direct.connect(new StreamableHTTPClientTransport(new URL(upstreamHttp.url), { sessionId: upstreamSessionId! }));
    try {
      await expect.poll(async () => (await direct.experimental.tasks.getTask(upstreamTaskId!)).status, { timeout: 10_000 }).toBe('cancelled');
    } finally {
      await direct.close();
    }
  });
});

describe('a stdio server', () => {
  it('killed mid-call fails the call clearly, and is started again', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const before = pidsMarked('gateway-stdio');
      expect(before).toHaveLength(1);
      const call = client.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 20, steps: 20 } }, CallToolResultSchema, { timeout: 60_000 });
      const deadline = Date.now() + 10_000;
      while (taskRowsOf('everything__trigger-long-running-operation').filter((row) => row.status === 'working').length === 0) {
        if (Date.now() > deadline) throw new Error('the call never started');
        await sleep(50);
      }
      await sleep(500);
      process.kill(before[0], 'SIGKILL');
      const result = await call;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/everything did not complete the call: .*(closed|Connection)/i);
      // Back with backoff, as a new child, and its tools work again.
      const again = Date.now() + 30_000;
      for (;;) {
        const echo = await client.callTool({ name: 'everything__echo', arguments: { message: 'again' } }).catch(() => undefined);
        if (echo && !echo.isError) break;
        if (Date.now() > again) throw new Error('the server was not started again');
        await sleep(500);
      }
      const after = pidsMarked('gateway-stdio');
      expect(after).toHaveLength(1);
      expect(after[0]).not.toBe(before[0]);
    } finally {
      await close();
    }
  }, 90_000);
});

describe('the 2026-07-28 era', () => {
  it('lists and calls the same tools', async () => {
    const modern = new ModernMcp(server.mcpUrl, token);
    const listed = await modern.call('tools/list');
    const names = (listed.tools as Array<{ name: string }>).map((tool) => tool.name);
    expect(names).toContain('remote__echo');
    // Some servers admit only some people: the list is not for a shared cache.
    expect(listed.cacheScope).toBe('private');
    const result = await modern.call('tools/call', { name: 'remote__echo', arguments: { message: 'modern' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: modern' }]);
  });
});

describe('a servers file that is not valid', () => {
  it('stops npm start with one line naming the file, the entry and the field', () => {
    const folder = fs.mkdtempSync(path.join(path.dirname(serversFile), 'bad-'));
    const bad = path.join(folder, 'servers.json');
    fs.writeFileSync(bad, JSON.stringify({ mcpServers: { broken: { url: 'not a url' } } }));
    const started = spawnSync(process.execPath, ['scripts/start.mjs'], {
      cwd: path.resolve(__dirname, '..', '..'),
      env: { ...process.env, MCP_SERVERS_FILE: bad, DATABASE_PATH: path.join(folder, 'app.db'), PORT: '1' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(started.status).toBe(1);
    const lines = started.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(bad);
    expect(lines[0]).toContain('mcpServers.broken.url');
  });
});
