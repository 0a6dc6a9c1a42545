import { CallToolResultSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSdkClient, RawMcp, sleep, SseReader } from '../helpers/mcp';
import { createToken, runScript, startServer, testDatabase, type TestServer } from '../helpers/server';

let server: TestServer;
let token: string;
let otherToken: string;

beforeAll(async () => {
  server = await startServer({
    TASK_MAX_TTL_MS: '600000',
    TASK_DEFAULT_TTL_MS: '300000',
    TASK_LIST_PAGE_SIZE: '3',
    TASK_POLL_INTERVAL_MS: '200',
    // Expiry is checked on access here; the sweeper has its own suite.
    TASK_SWEEP_INTERVAL_MS: '3600000',
    TASK_MAX_ACTIVE_PER_USER: '5',
    MCP_FIXTURE_TOOLS: '1',
  });
  token = createToken(server, 'ada@example.com');
  otherToken = createToken(server, 'bob@example.com');
});

afterAll(async () => {
  await server?.stop();
});

async function session(as = token): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, as);
  await mcp.initialize();
  return mcp;
}

const isoUtc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('with the official SDK client', () => {
  it('runs delay as a task from creation to result', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const kinds: string[] = [];
      let taskId = '';
      let result: any;
      const progress: number[] = [];
      const stream = client.experimental.tasks.callToolStream({ name: 'delay', arguments: { seconds: 1.2 } }, CallToolResultSchema, {
        task: { ttl: 60_000 },
        onprogress: (update) => progress.push(update.progress),
      });
      for await (const message of stream) {
        kinds.push(message.type);
        if (message.type === 'taskCreated') taskId = message.task.taskId;
        if (message.type === 'result') result = message.result;
        if (message.type === 'error') throw message.error;
      }
      expect(kinds[0]).toBe('taskCreated');
      expect(kinds).toContain('taskStatus');
      expect(kinds.at(-1)).toBe('result');
      expect(result.content).toEqual([{ type: 'text', text: 'Waited 1.2 s.' }]);
      expect(result._meta['io.modelcontextprotocol/related-task']).toEqual({ taskId });
      // Progress for the task arrives on the GET stream with the original tools/call token.
      expect(progress).toEqual([0.5, 1, 1.2]);

      const task = await client.experimental.tasks.getTask(taskId);
      expect(task).toMatchObject({ taskId, status: 'completed', ttl: 60_000, pollInterval: 200 });
      const listed = await client.experimental.tasks.listTasks();
      expect(listed.tasks.map((item) => item.taskId)).toContain(taskId);
    } finally {
      await close();
    }
  });

  it('receives notifications/tasks/status on the GET stream', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const statuses: string[] = [];
      client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => {
        statuses.push(notification.params.status);
      });
      const stream = client.experimental.tasks.callToolStream({ name: 'delay', arguments: { seconds: 0.5, fail: true } }, CallToolResultSchema, {
        task: {},
      });
      const messages = [];
      for await (const message of stream) messages.push(message);
      expect(messages.at(-1)?.type).toBe('error');
      await expect.poll(() => statuses).toEqual(['failed']);
    } finally {
      await close();
    }
  });

  it('cancels a running task: it stays cancelled and its work stops', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      let taskId = '';
      for await (const message of client.experimental.tasks.callToolStream({ name: 'delay', arguments: { seconds: 30 } }, CallToolResultSchema, { task: {} })) {
        if (message.type === 'taskCreated') {
          taskId = message.task.taskId;
          break;
        }
      }
      // Cancel once the work is under way (it has reported progress), however slow the machine.
      await expect.poll(() => (server.db().prepare('SELECT progress FROM tasks WHERE id = ?').get(taskId) as any).progress, { timeout: 10_000 }).toBeGreaterThan(0);
      const cancelled = await client.experimental.tasks.cancelTask(taskId);
      expect(cancelled.status).toBe('cancelled');
      expect(cancelled.statusMessage).toBe('The task was cancelled by request.');
      const progressAtCancel = (server.db().prepare('SELECT progress FROM tasks WHERE id = ?').get(taskId) as any).progress;
      await sleep(1200);
      const after = await client.experimental.tasks.getTask(taskId);
      expect(after.status).toBe('cancelled');
      expect(after.lastUpdatedAt).toBe(cancelled.lastUpdatedAt);
      expect((server.db().prepare('SELECT progress FROM tasks WHERE id = ?').get(taskId) as any).progress).toBe(progressAtCancel);
      await expect(client.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/already in terminal status 'cancelled'/);
    } finally {
      await close();
    }
  });
});

/** Waits for the line the fixture tool writes when its run() ends; null if none came in time. */
async function runEnded(taskId: string, timeoutMs = 10_000): Promise<{ ending: string } | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const line = server
      .output()
      .split('\n')
      .find((text) => text.startsWith('{"fixture":"run-ended"') && JSON.parse(text).taskId === taskId);
    if (line) return JSON.parse(line);
    await sleep(50);
  }
  return null;
}

describe('task lifecycle over raw HTTP', () => {
  it("cancelling a task ends its tool's run() at once, aborted rather than waited out", async () => {
    const mcp = await session();
    const { task } = await mcp.call('tools/call', { name: 'fixture_observed_delay', arguments: { seconds: 30 }, task: {} });
    expect((await mcp.call('tasks/cancel', { taskId: task.taskId })).status).toBe('cancelled');
    // The run has 30 s to go: only the abort can end it within the wait.
    expect(await runEnded(task.taskId)).toMatchObject({ ending: 'AbortError' });
  });

  it('refuses a tool that requires a task, called without one, with -32601, and runs it as a task', async () => {
    const mcp = await session();
    const error = await mcp.error('tools/call', { name: 'fixture_requires_task', arguments: {} });
    expect(error.code).toBe(-32601);
    expect(error.message).toContain('fixture_requires_task must be called as a task');
    const { task } = await mcp.call('tools/call', { name: 'fixture_requires_task', arguments: {}, task: {} });
    expect((await mcp.call('tasks/result', { taskId: task.taskId })).content).toEqual([{ type: 'text', text: 'Ran as a task.' }]);
  });

  it('refuses a tool that asks questions to a client that cannot answer them, and creates no task', async () => {
    const mcp = await session();
    const before = server.db().prepare("SELECT count(*) AS n FROM tasks WHERE tool_name = 'test_elicitation'").get();
    for (const task of [undefined, {}]) {
      const error = await mcp.error('tools/call', { name: 'test_elicitation', arguments: { message: 'Who are you?' }, ...(task ? { task } : {}) });
      expect(error.code).toBe(-32600);
      expect(error.message).toContain('test_elicitation needs a client that supports elicitation');
    }
    expect(server.db().prepare("SELECT count(*) AS n FROM tasks WHERE tool_name = 'test_elicitation'").get()).toEqual(before);
  });

  it("ends a completed task's run by returning", async () => {
    const mcp = await session();
    const { task } = await mcp.call('tools/call', { name: 'fixture_observed_delay', arguments: { seconds: 0 }, task: {} });
    expect(await runEnded(task.taskId)).toMatchObject({ ending: 'returned' });
    expect((await mcp.call('tasks/get', { taskId: task.taskId })).status).toBe('completed');
  });

  it('returns CreateTaskResult once the row is committed, with the spec fields', async () => {
    const mcp = await session();
    const reply = await mcp.request('tools/call', { name: 'delay', arguments: { seconds: 0.2 }, task: { ttl: 5000 } });
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    const { task, _meta } = reply.body.result;
    expect(task).toMatchObject({ status: 'working', ttl: 5000, pollInterval: 200 });
    // A UUID of version 7 that starts with the time of creation (lib/tasks/task-ids.ts).
    expect(task.taskId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(task.taskId.replace(/-/g, '').slice(0, 12), 16)).toBe(Date.parse(task.createdAt));
    expect(task.createdAt).toMatch(isoUtc);
    expect(task.lastUpdatedAt).toMatch(isoUtc);
    expect(_meta['io.modelcontextprotocol/model-immediate-response']).toContain(task.taskId);
    const row = server.db().prepare('SELECT status, tool_name FROM tasks WHERE id = ?').get(task.taskId);
    expect(row).toEqual({ status: expect.stringMatching(/^(working|completed)$/), tool_name: 'delay' });
  });

  it('applies the default ttl and caps requests above the maximum', async () => {
    const mcp = await session();
    expect((await mcp.startDelayTask(0)).ttl).toBe(300_000);
    expect((await mcp.startDelayTask(0, { task: { ttl: 10 ** 9 } })).ttl).toBe(600_000);
    const task = await mcp.startDelayTask(0, { task: { ttl: 1234 } });
    expect(task.ttl).toBe(1234);
    const row = server.db().prepare('SELECT created_at, expires_at FROM tasks WHERE id = ?').get(task.taskId) as any;
    expect(row.expires_at - row.created_at).toBe(1234);
  });

  it('raises a ttl below one second to one second', async () => {
    const mcp = await session();
    expect((await mcp.startDelayTask(0, { task: { ttl: 0 } })).ttl).toBe(1000);
  });

  it('limits how many tasks one user may have active at once', async () => {
    const mcp = await session(createToken(server, 'erin@example.com'));
    const running = [];
    for (let i = 0; i < 5; i += 1) running.push(await mcp.startDelayTask(60));
    const refused = await mcp.error('tools/call', { name: 'delay', arguments: { seconds: 1 }, task: {} });
    expect(refused.code).toBe(-32600);
    expect(refused.message).toMatch(/Too many active tasks: you have 5 .*limit is 5/);
    await expect((await session()).startDelayTask(0)).resolves.toMatchObject({ status: 'working' });
    await mcp.call('tasks/cancel', { taskId: running[0].taskId });
    expect((await mcp.startDelayTask(0)).status).toBe('working');
    for (const task of running.slice(1)) await mcp.call('tasks/cancel', { taskId: task.taskId });
  });

  it('answers tasks/get with the flat Task and moves lastUpdatedAt on every change', async () => {
    const mcp = await session();
    const created = await mcp.startDelayTask(1.2);
    // The first progress report (0.5 s) changes the task; poll for it rather than guess when it comes.
    let working: any;
    await expect
      .poll(async () => (working = await mcp.call('tasks/get', { taskId: created.taskId })).statusMessage, { timeout: 10_000, interval: 50 })
      .toMatch(/^Waiting: (0.5|1) of 1.2 s done$/);
    expect(Object.keys(working).sort()).toEqual(['createdAt', 'lastUpdatedAt', 'pollInterval', 'status', 'statusMessage', 'taskId', 'ttl']);
    expect(working.status).toBe('working');
    expect(Date.parse(working.lastUpdatedAt)).toBeGreaterThan(Date.parse(created.lastUpdatedAt));
    let done: any;
    await expect
      .poll(async () => (done = await mcp.call('tasks/get', { taskId: created.taskId, task: { ttl: 1 }, _meta: { progressToken: 9 } })).status, { timeout: 10_000 })
      .toBe('completed');
    expect(done.createdAt).toBe(created.createdAt);
    expect(Date.parse(done.lastUpdatedAt)).toBeGreaterThan(Date.parse(working.lastUpdatedAt));
  });

  it('blocks tasks/result until terminal and wakes every waiter', async () => {
    const mcp = await session();
    const task = await mcp.startDelayTask(1);
    const started = Date.now();
    const replies = await Promise.all([1, 2, 3].map(() => mcp.request('tasks/result', { taskId: task.taskId })));
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
    for (const reply of replies) {
      expect(reply.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(reply.body.result).toEqual({
        content: [{ type: 'text', text: 'Waited 1 s.' }],
        _meta: { 'io.modelcontextprotocol/related-task': { taskId: task.taskId } },
      });
    }
    // Once terminal, the result comes back at once as plain JSON, as often as asked.
    const again = await mcp.request('tasks/result', { taskId: task.taskId });
    expect(again.headers.get('content-type')).toMatch(/^application\/json/);
    expect(again.body.result.content[0].text).toBe('Waited 1 s.');
  });

  it('opens the tasks/result stream at once, before anything is sent on it', async () => {
    const mcp = await session();
    const task = await mcp.startDelayTask(3);
    const response = await mcp.post({ jsonrpc: '2.0', id: 'quiet', method: 'tasks/result', params: { taskId: task.taskId } });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect((await mcp.call('tasks/get', { taskId: task.taskId })).status).toBe('working');
    await mcp.call('tasks/cancel', { taskId: task.taskId });
    await response.body?.cancel();
  });

  it('ends a task whose tool returns isError as failed, and returns that result', async () => {
    const mcp = await session();
    const task = await mcp.startDelayTask(0, { arguments: { seconds: 0, fail: true } });
    const result = await mcp.call('tasks/result', { taskId: task.taskId });
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toMatch(/Failed on purpose/);
    const final = await mcp.call('tasks/get', { taskId: task.taskId });
    expect(final.status).toBe('failed');
    expect(final.statusMessage).toMatch(/^Tool execution failed: Failed on purpose/);
  });

  it('fails a task whose arguments do not fit the schema, with the error result tools/call would give', async () => {
    const mcp = await session();
    const task = await mcp.startDelayTask(0, { arguments: { seconds: -5 } });
    const result = await mcp.call('tasks/result', { taskId: task.taskId });
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toMatch(/seconds/);
    expect((await mcp.call('tasks/get', { taskId: task.taskId })).status).toBe('failed');
  });

  it('refuses to cancel a terminal task with -32602 naming its status', async () => {
    const mcp = await session();
    const task = await mcp.startDelayTask(0);
    await mcp.call('tasks/result', { taskId: task.taskId });
    const error = await mcp.error('tasks/cancel', { taskId: task.taskId });
    expect(error).toEqual({ code: -32602, message: "Cannot cancel task: already in terminal status 'completed'" });
  });

  it('returns an error from tasks/result for a cancelled task', async () => {
    const mcp = await session();
    const task = await mcp.startDelayTask(30);
    const waiting = mcp.request('tasks/result', { taskId: task.taskId });
    await sleep(200);
    await mcp.call('tasks/cancel', { taskId: task.taskId });
    const reply = await waiting;
    expect(reply.body.error.code).toBe(-32603);
    expect(reply.body.error.message).toMatch(/cancelled/);
  });

  it('lets the database decide cancel racing completion, every time', async () => {
    const mcp = await session();
    for (let round = 0; round < 15; round += 1) {
      const task = await mcp.startDelayTask(0.5);
      await sleep(480 + (round % 5) * 10);
      const reply = await mcp.request('tasks/cancel', { taskId: task.taskId });
      await sleep(150);
      const final = await mcp.call('tasks/get', { taskId: task.taskId });
      if (reply.body.result) {
        expect(reply.body.result.status).toBe('cancelled');
        expect(final.status).toBe('cancelled');
      } else {
        expect(reply.body.error.message).toBe("Cannot cancel task: already in terminal status 'completed'");
        expect(final.status).toBe('completed');
      }
      const terminalEvents = server
        .db()
        .prepare("SELECT to_status FROM task_events WHERE task_id = ? AND to_status IN ('completed','failed','cancelled')")
        .all(task.taskId) as Array<{ to_status: string }>;
      expect(terminalEvents).toEqual([{ to_status: final.status }]);
    }
  });

  it('records every transition in task_events', async () => {
    const mcp = await session();
    const task = await mcp.startDelayTask(0);
    await mcp.call('tasks/result', { taskId: task.taskId });
    const events = server.db().prepare('SELECT from_status, to_status, actor FROM task_events WHERE task_id = ? ORDER BY id').all(task.taskId);
    expect(events).toEqual([
      { from_status: null, to_status: 'working', actor: 'client' },
      { from_status: 'working', to_status: 'completed', actor: 'system' },
    ]);
  });
});

describe('unknown, expired and other users’ tasks', () => {
  it('answers an unknown task id with -32602 Task not found', async () => {
    const mcp = await session();
    const taskId = crypto.randomUUID();
    expect(await mcp.error('tasks/get', { taskId })).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    expect((await mcp.error('tasks/result', { taskId })).message).toMatch(/Task not found/);
    expect((await mcp.error('tasks/cancel', { taskId })).message).toMatch(/Task not found/);
  });

  it("treats another user's task exactly like an unknown one", async () => {
    const ada = await session();
    const bob = await session(otherToken);
    const task = await ada.startDelayTask(5);
    const unknownId = crypto.randomUUID();
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const theirs = await bob.error(method, { taskId: task.taskId });
      const unknown = await bob.error(method, { taskId: unknownId });
      expect(theirs).toEqual(unknown);
    }
    const bobsList = await bob.call('tasks/list');
    expect(bobsList.tasks.map((item: any) => item.taskId)).not.toContain(task.taskId);
    expect((await ada.call('tasks/get', { taskId: task.taskId })).status).toBe('working');
    await ada.call('tasks/cancel', { taskId: task.taskId });
  });

  it('answers an expired task with -32602 Task has expired', async () => {
    const mcp = await session();
    const task = await mcp.startDelayTask(0);
    await mcp.call('tasks/result', { taskId: task.taskId });
    server.db().prepare('UPDATE tasks SET expires_at = ? WHERE id = ?').run(Date.now() - 1, task.taskId);
    expect(await mcp.error('tasks/get', { taskId: task.taskId })).toEqual({ code: -32602, message: 'Failed to retrieve task: Task has expired' });
    expect((await mcp.error('tasks/result', { taskId: task.taskId })).message).toMatch(/Task has expired/);
    const listed = await mcp.call('tasks/list');
    expect(listed.tasks.map((item: any) => item.taskId)).not.toContain(task.taskId);
  });
});

describe('tasks/list', () => {
  it('pages newest first and lists every task exactly once while tasks are created', async () => {
    const carol = createToken(server, 'carol@example.com');
    const mcp = await session(carol);
    const before: string[] = [];
    for (let i = 0; i < 7; i += 1) before.push((await mcp.startDelayTask(0)).taskId);

    const seen: string[] = [];
    const createdDuring: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await mcp.call('tasks/list', cursor ? { cursor } : {});
      expect(page.tasks.length).toBeLessThanOrEqual(3);
      seen.push(...page.tasks.map((task: any) => task.taskId));
      cursor = page.nextCursor;
      pages += 1;
      createdDuring.push((await mcp.startDelayTask(0)).taskId);
    } while (cursor);

    expect(seen).toEqual([...before].reverse());
    expect(pages).toBe(3);
    const fresh = await mcp.call('tasks/list');
    expect(fresh.tasks.map((task: any) => task.taskId)).toEqual(createdDuring.slice(-3).reverse());
  });

  it('refuses a malformed cursor and another user’s cursor with -32602', async () => {
    const ada = await session();
    for (let i = 0; i < 4; i += 1) await ada.startDelayTask(0);
    const { nextCursor } = await ada.call('tasks/list');
    expect(typeof nextCursor).toBe('string');
    expect((await ada.error('tasks/list', { cursor: 'not-a-cursor' })).code).toBe(-32602);
    expect((await ada.error('tasks/list', { cursor: `${nextCursor}x` })).code).toBe(-32602);
    const bob = await session(otherToken);
    const error = await bob.error('tasks/list', { cursor: nextCursor });
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(/cursor/);
    expect((await ada.error('tasks/list', { cursor: 17 })).code).toBe(-32602);
  });
});

describe('notifications on the GET stream', () => {
  it('delivers progress and status notifications, and replays them after Last-Event-ID', async () => {
    const mcp = await session();
    const stream = await mcp.openGetStream();
    await stream.next(); // priming event
    const task = await mcp.startDelayTask(1.2, { _meta: { progressToken: 'tok-1' } });
    const received: any[] = [];
    while (received.length < 4) received.push(await stream.nextMessage());
    await stream.close();

    expect(received.slice(0, 3).map((message) => [message.method, message.params.progress])).toEqual([
      ['notifications/progress', 0.5],
      ['notifications/progress', 1],
      ['notifications/progress', 1.2],
    ]);
    for (const message of received.slice(0, 3)) {
      expect(message.params.progressToken).toBe('tok-1');
      expect(message.params.total).toBe(1.2);
      expect(message.params._meta['io.modelcontextprotocol/related-task']).toEqual({ taskId: task.taskId });
    }
    const status = received[3];
    expect(status.method).toBe('notifications/tasks/status');
    expect(status.params).toMatchObject({ taskId: task.taskId, status: 'completed', ttl: 300_000 });
    expect(status.params._meta).toBeUndefined();

    const ids = received.map((message) => Number(message.__eventId.slice('get:'.length)));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const resumed = await mcp.openGetStream(received[0].__eventId);
    const replayed = [await resumed.nextMessage(), await resumed.nextMessage(), await resumed.nextMessage()];
    await resumed.close();
    expect(replayed.map((message) => message?.__eventId)).toEqual(received.slice(1).map((message) => message.__eventId));
  });

  it('sends a session only its own notifications', async () => {
    const first = await session();
    const second = await session();
    const stream = await second.openGetStream();
    await stream.next();
    const task = await first.startDelayTask(0.6, { _meta: { progressToken: 1 } });
    await first.call('tasks/result', { taskId: task.taskId });
    await expect(stream.nextMessage(800)).rejects.toThrow(/timed out/);
    await stream.close();
  });
});

describe('the TTL sweeper', () => {
  let sweeping: TestServer;

  beforeAll(async () => {
    sweeping = await startServer({ TASK_SWEEP_INTERVAL_MS: '200' });
  });

  afterAll(async () => {
    await sweeping?.stop();
  });

  it('deletes expired tasks with their events, waking their waiters', async () => {
    const mcp = new RawMcp(sweeping.mcpUrl, createToken(sweeping, 'dora@example.com'));
    await mcp.initialize();
    const running = await mcp.startDelayTask(30, { task: { ttl: 800 } });
    const waiter = mcp.request('tasks/result', { taskId: running.taskId });
    const reply = await waiter;
    // Woken by expiry or by the deletion itself, whichever comes first.
    expect(reply.body.error.code).toBe(-32602);
    expect(reply.body.error.message).toMatch(/^Failed to retrieve task result: Task (not found|has expired)$/);
    const db = sweeping.db();
    await expect.poll(() => db.prepare('SELECT count(*) AS n FROM tasks WHERE id = ?').get(running.taskId)).toEqual({ n: 0 });
    expect(db.prepare('SELECT count(*) AS n FROM tasks WHERE id = ?').get(running.taskId)).toEqual({ n: 0 });
    expect(db.prepare('SELECT count(*) AS n FROM task_events WHERE task_id = ?').get(running.taskId)).toEqual({ n: 0 });
    expect((await mcp.error('tasks/get', { taskId: running.taskId })).message).toMatch(/Task not found/);
  });

  it('deletes every row of an expired task: the task, its events and its questions', async () => {
    const mcp = new RawMcp(sweeping.mcpUrl, createToken(sweeping, 'erin@example.com'));
    await mcp.initialize(undefined, { elicitation: {} });
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Gone soon?' }, task: {} });
    const db = sweeping.db();
    const count = (table: string, column: string) => (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${column} = ?`).get(task.taskId) as { n: number }).n;
    await expect.poll(() => count('task_inputs', 'task_id')).toBe(1);
    expect(count('task_events', 'task_id')).toBeGreaterThan(0);
    // Expire it now, whatever ttl it was granted.
    db.prepare('UPDATE tasks SET expires_at = ? WHERE id = ?').run(Date.now() - 1, task.taskId);
    await expect.poll(() => count('tasks', 'id')).toBe(0);
    expect(count('task_events', 'task_id')).toBe(0);
    expect(count('task_inputs', 'task_id')).toBe(0);
  });

  it('deletes an expired task only together with its task.expired event: one that cannot be written keeps the task for the next sweep', async () => {
    const email = 'fay@example.com';
    const mcp = new RawMcp(sweeping.mcpUrl, createToken(sweeping, email));
    await mcp.initialize();
    // Someone to tell, so that the expiry of a running task writes an event; nothing is delivered to it.
    const added = runScript(sweeping, 'webhook', ['add', '--url', 'https://hooks.example.com/expired', '--email', email, '--event', 'task.expired']);
    expect(added.status).toBe(0);
    const db = sweeping.db();
    // The database refuses the event, as a full disk or a lost connection would at that moment.
    if (testDatabase === 'postgres') {
      db.prepare(
        "CREATE FUNCTION refuse_expired_event() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.type = 'task.expired' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$",
      ).run();
      db.prepare('CREATE TRIGGER refuse_expired_event BEFORE INSERT ON notification_events FOR EACH ROW EXECUTE FUNCTION refuse_expired_event()').run();
    } else {
      db.prepare("CREATE TRIGGER refuse_expired_event BEFORE INSERT ON notification_events WHEN NEW.type = 'task.expired' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END").run();
    }
    const running = await mcp.startDelayTask(60);
    const sweepsFailed = () => sweeping.output().split('TTL sweep failed').length - 1;
    const failedBefore = sweepsFailed();
    db.prepare('UPDATE tasks SET expires_at = ? WHERE id = ?').run(Date.now() - 1, running.taskId);
    const tasksLeft = () => (db.prepare('SELECT count(*) AS n FROM tasks WHERE id = ?').get(running.taskId) as { n: number }).n;
    const expiredEvents = () => (db.prepare("SELECT count(*) AS n FROM notification_events WHERE task_id = ? AND type = 'task.expired'").get(running.taskId) as { n: number }).n;
    try {
      await expect.poll(sweepsFailed, { timeout: 10_000 }).toBeGreaterThan(failedBefore);
      expect(tasksLeft()).toBe(1);
      expect(expiredEvents()).toBe(0);
    } finally {
      db.prepare('DROP TRIGGER refuse_expired_event' + (testDatabase === 'postgres' ? ' ON notification_events' : '')).run();
      if (testDatabase === 'postgres') db.prepare('DROP FUNCTION refuse_expired_event()').run();
    }
    await expect.poll(tasksLeft, { timeout: 10_000 }).toBe(0);
    expect(expiredEvents()).toBe(1);
  });

  it('ends MCP sessions left idle, but not one with its stream open (GET or a long plain call)', async () => {
    const token = createToken(sweeping, 'idle@example.com');
    const idle = new RawMcp(sweeping.mcpUrl, token);
    await idle.initialize();
    const watching = new RawMcp(sweeping.mcpUrl, token);
    await watching.initialize();
    const stream = await watching.openGetStream();
    await stream.next();
    const calling = new RawMcp(sweeping.mcpUrl, token);
    await calling.initialize();
    const call = new SseReader(await calling.post({ jsonrpc: '2.0', id: 'long', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 60 } } }));
    await call.next();
    const longAgo = Date.now() - 25 * 60 * 60 * 1000;
    sweeping
      .db()
      .prepare('UPDATE mcp_sessions SET last_seen_at = ? WHERE id IN (?, ?, ?)')
      .run(longAgo, idle.sessionId, watching.sessionId, calling.sessionId);
    const row = (id?: string) => sweeping.db().prepare('SELECT ended_at FROM mcp_sessions WHERE id = ?').get(id) as { ended_at: number | null } | undefined;
    // One sweep ends the idle session and deletes its row; the same sweep kept the ones in use.
    await expect.poll(() => row(idle.sessionId)).toBeUndefined();
    expect(row(watching.sessionId)).toEqual({ ended_at: null });
    expect(row(calling.sessionId)).toEqual({ ended_at: null });
    expect((await idle.request('ping')).status).toBe(404);
    expect((await watching.request('ping')).status).toBe(200);
    await calling.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long' } });
    expect(await call.next()).toBeNull();
    await stream.close();
  });
});
