import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawMcp } from '../helpers/mcp';
import { createToken, startServer, testDatabase, type TestServer } from '../helpers/server';

let server: TestServer;

beforeAll(async () => {
  server = await startServer({ TASK_POLL_INTERVAL_MS: '250', TASK_LIST_PAGE_SIZE: '2' });
});

afterAll(async () => {
  await server?.stop();
});

describe('kill -9 and a fresh start', () => {
  it('keeps its generated secret (a file beside SQLite, a row in PostgreSQL), so list cursors from before a restart still work', async () => {
    const mcp = new RawMcp(server.mcpUrl, createToken(server, 'cursor@example.com'));
    await mcp.initialize();
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push((await mcp.startDelayTask(0)).taskId);
    const first = await mcp.call('tasks/list');
    expect(first.tasks.map((task: any) => task.taskId)).toEqual([ids[2], ids[1]]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const secretFile = path.join(server.dataDir, 'secret');
    const storedSecret = () =>
      testDatabase === 'postgres' ? (server.db().prepare('SELECT secret FROM generated_secret').pluck().get() as string) : fs.readFileSync(secretFile, 'utf8');
    const secret = storedSecret();
    expect(secret.trim().length).toBeGreaterThanOrEqual(32);
    // Instances sharing PostgreSQL read it from there: none keeps a copy of its own.
    expect(fs.existsSync(secretFile)).toBe(testDatabase === 'sqlite');

    await server.kill9();
    await server.restart();
    expect(storedSecret()).toBe(secret);
    const second = await mcp.call('tasks/list', { cursor: first.nextCursor });
    expect(second.tasks.map((task: any) => task.taskId)).toEqual([ids[0]]);
    expect(second.nextCursor).toBeUndefined();
  });

  it('keeps every task in an honest state and resumes what can resume', async () => {
    const mcp = new RawMcp(server.mcpUrl, createToken(server, 'ada@example.com'));
    await mcp.initialize();

    const done = await mcp.startDelayTask(0);
    const doneResult = await mcp.call('tasks/result', { taskId: done.taskId });
    const failed = await mcp.startDelayTask(0, { arguments: { seconds: 0, fail: true } });
    const failedResult = await mcp.call('tasks/result', { taskId: failed.taskId });
    const cancelled = await mcp.startDelayTask(60);
    await mcp.call('tasks/cancel', { taskId: cancelled.taskId });
    const resumable = await mcp.startDelayTask(3, { _meta: { progressToken: 'resume' } });
    // A task of a tool this server no longer has cannot be resumed: it must be failed, not left working.
    const user = server.db().prepare("SELECT id FROM users WHERE email = 'ada@example.com'").get() as { id: string };
    const orphanId = crypto.randomUUID();
    const now = Date.now();
    server
      .db()
      .prepare(
        `INSERT INTO tasks (id, user_id, session_id, tool_name, arguments, status, status_message, created_at, last_updated_at, ttl_ms, expires_at, poll_interval_ms)
         VALUES (?, ?, ?, 'retired_tool', '{}', 'working', 'Working', ?, ?, 600000, ?, 1000)`,
      )
      .run(orphanId, user.id, mcp.sessionId, now, now, now + 600_000);
    // Progress is stored about once a second; poll for it rather than guess when it lands.
    const storedProgress = () => (server.db().prepare('SELECT progress FROM tasks WHERE id = ?').get(resumable.taskId) as any).progress;
    await expect.poll(storedProgress, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(1);
    const progressBeforeKill = storedProgress();

    await server.kill9();
    const statuses = server.db().prepare('SELECT id, status FROM tasks').all() as Array<{ id: string; status: string }>;
    expect(statuses.find((row) => row.id === resumable.taskId)?.status).toBe('working');

    await server.restart();
    // The session is durable too: the same Mcp-Session-Id still works.
    expect((await mcp.call('tasks/get', { taskId: done.taskId })).status).toBe('completed');
    expect(await mcp.call('tasks/result', { taskId: done.taskId })).toEqual(doneResult);
    expect(await mcp.call('tasks/result', { taskId: failed.taskId })).toEqual(failedResult);
    expect((await mcp.call('tasks/get', { taskId: cancelled.taskId })).status).toBe('cancelled');

    const orphan = await mcp.call('tasks/get', { taskId: orphanId });
    expect(orphan.status).toBe('failed');
    expect(orphan.statusMessage).toMatch(/server restarted before this task finished/);
    const orphanResult = await mcp.request('tasks/result', { taskId: orphanId });
    expect(orphanResult.body.error.code).toBe(-32603);
    expect(orphanResult.body.error.message).toMatch(/restarted/);

    const resumedTask = await mcp.call('tasks/get', { taskId: resumable.taskId });
    expect(['working', 'completed']).toContain(resumedTask.status);
    const result = await mcp.call('tasks/result', { taskId: resumable.taskId });
    expect(result.content[0].text).toBe('Waited 3 s.');
    // It carried on from where it was rather than starting again: progress never went back.
    const progress = (server.db().prepare("SELECT message FROM session_messages WHERE message LIKE '%\"resume\"%' ORDER BY id").all() as Array<{ message: string }>).map(
      (row) => JSON.parse(row.message).params.progress,
    );
    expect(progress.at(-1)).toBe(3);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.filter((value) => value === 0.5)).toHaveLength(1);
    const row = server.db().prepare('SELECT attempt FROM tasks WHERE id = ?').get(resumable.taskId) as any;
    expect(row.attempt).toBe(2);
    const events = server.db().prepare('SELECT to_status FROM task_events WHERE task_id = ? ORDER BY id').all(resumable.taskId);
    expect(events).toEqual([{ to_status: 'working' }, { to_status: 'completed' }]);
    if (testDatabase === 'sqlite') {
      // One process on its SQLite file takes every task left working when it starts.
      expect(server.output()).toMatch(/Tasks interrupted by the last shutdown: 1 resumed, 1 failed/);
    } else {
      // On PostgreSQL a restarted instance takes its predecessor's tasks once their leases run out (the
      // orphan, which no instance ever held, is failed by whichever scan sees it first: asserted above).
      expect(server.output()).toMatch(/Tasks taken over from a stopped instance: 1 resumed/);
    }
  });

  it('stops gracefully with streams open, and resumes the interrupted work at the next start', async () => {
    const mcp = new RawMcp(server.mcpUrl, createToken(server, 'grace@example.com'));
    await mcp.initialize();
    const stream = await mcp.openGetStream();
    await stream.next();
    const task = await mcp.startDelayTask(2);
    const waiting = await mcp.post({ jsonrpc: '2.0', id: 'wait', method: 'tasks/result', params: { taskId: task.taskId } });
    // Restart once the work is under way, however slow the machine.
    await expect.poll(() => (server.db().prepare('SELECT progress FROM tasks WHERE id = ?').get(task.taskId) as any).progress, { timeout: 10_000 }).toBeGreaterThan(0);
    await server.restart();
    // Both streams were ended by the shutdown rather than holding it open.
    expect(await stream.next(1000)).toBeNull();
    await waiting.text();
    // tasks/result waits for the end; on PostgreSQL the new instance resumes the task in the background,
    // so the attempt is read once it has finished.
    expect((await mcp.call('tasks/result', { taskId: task.taskId })).content[0].text).toBe('Waited 2 s.');
    expect(server.db().prepare('SELECT attempt FROM tasks WHERE id = ?').get(task.taskId)).toEqual({ attempt: 2 });
  });

  it("continues a task's progress on the GET stream from the last value sent there", async () => {
    const mcp = new RawMcp(server.mcpUrl, createToken(server, 'progress@example.com'));
    await mcp.initialize();
    const getStream = await mcp.openGetStream();
    await getStream.next();
    const task = await mcp.startDelayTask(4, { _meta: { progressToken: 'on-get' } });
    const ofTask = (message: Record<string, any>) =>
      message.params?.taskId === task.taskId || message.params?._meta?.['io.modelcontextprotocol/related-task']?.taskId === task.taskId;
    const progress: number[] = [];
    let lastEventId = '';
    while (progress.length === 0 || progress.at(-1)! < 1.5) {
      const message = await getStream.nextMessageWhere((candidate) => candidate.method === 'notifications/progress' && ofTask(candidate));
      progress.push(message.params.progress);
      lastEventId = message.__eventId;
    }
    await server.kill9();
    // What was stored lags what was sent: progress is stored about once a second.
    server.db().prepare('UPDATE tasks SET progress = 0.5 WHERE id = ?').run(task.taskId);
    await server.restart();

    const resumed = await mcp.openGetStream(lastEventId);
    for (;;) {
      const message = await resumed.nextMessageWhere(ofTask, 20_000);
      if (message.method === 'notifications/tasks/status' && message.params.status === 'completed') break;
      if (message.method === 'notifications/progress') progress.push(message.params.progress);
    }
    for (let i = 1; i < progress.length; i += 1) expect(progress[i]).toBeGreaterThan(progress[i - 1]);
    expect(progress.at(-1)).toBe(4);
    await resumed.close();
  });
});
