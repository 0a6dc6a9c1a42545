import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerInDashboard } from '../helpers/dashboard';
import { connectSdk2Client, connectSdkClient, RawMcp, SseReader, sleep } from '../helpers/mcp';
import { ModernMcp, tasksExtension } from '../helpers/modern';
import { createToken, startServer, type TestServer } from '../helpers/server';

/**
 * Jobs longer than a client's own request timeout, from clients without tasks: the call is answered
 * "still running" within the answer window, and task_result fetches the result later. The window and
 * the clients' timeouts are shortened here; their defaults (45 s, 60 s) are run by mcp-remote.test.ts.
 */

const windowMs = 1500;
let server: TestServer;
let token: string;
let otherToken: string;

beforeAll(async () => {
  server = await startServer({
    TASK_POLL_INTERVAL_MS: '200',
    CALL_ANSWER_WITHIN_MS: String(windowMs),
    CALL_ANSWER_WITHIN_MS_BY_CLIENT: 'Patient Client=8000, eager-client=600',
    MCP_FIXTURE_TOOLS: '1',
  });
  token = createToken(server, 'ada@example.com');
  otherToken = createToken(server, 'bob@example.com');
});

afterAll(async () => {
  await server?.stop();
});

const stillRunning = (result: any) => Boolean(result.structuredContent && 'pollAfterSeconds' in result.structuredContent);
const taskRow = (taskId: string) => server.db().prepare('SELECT status, call_request_id FROM tasks WHERE id = ?').get(taskId) as { status: string; call_request_id: string | null };
const timeline = (taskId: string) => server.db().prepare('SELECT to_status AS status, status_message AS message, actor FROM task_events WHERE task_id = ? ORDER BY id').all(taskId) as Array<{ status: string; message: string; actor: string }>;

/** Calls task_result until the task has ended, as a model told "still running" does; returns the last answer and how many it took. */
async function resultOf(call: (taskId: string) => Promise<any>, taskId: string): Promise<{ result: any; calls: number }> {
  for (let calls = 1; calls <= 40; calls += 1) {
    const result = await call(taskId);
    if (!stillRunning(result)) return { result, calls };
    expect(result.structuredContent.taskId).toBe(taskId);
  }
  throw new Error(`task ${taskId} still running after 40 task_result calls`);
}

describe('a job longer than the client waits', () => {
  it('is answered early to the SDK 2.x client with its default options, and task_result returns the real result later', async () => {
    const { client, close } = await connectSdk2Client(server.mcpUrl, token);
    try {
      const clientTimeout = { timeout: 4000 };
      const started = Date.now();
      const first: any = await client.callTool({ name: 'delay', arguments: { seconds: 6 } }, clientTimeout);
      const answeredAfter = Date.now() - started;
      expect(answeredAfter).toBeGreaterThanOrEqual(windowMs - 50);
      expect(answeredAfter).toBeLessThan(4000);
      expect(first.isError).toBeFalsy();
      const { taskId, status, statusMessage, pollAfterSeconds } = first.structuredContent;
      expect(status).toBe('working');
      expect(statusMessage).toMatch(/^Waiting: /);
      expect(pollAfterSeconds).toBe(1);
      // The words a model acts on say the same, and name the tool to call.
      expect(first.content[0].text).toContain(`task ${taskId}`);
      expect(first.content[0].text).toContain(`task_result with {"taskId": "${taskId}"}`);
      expect(JSON.parse(first.content[1].text)).toEqual(first.structuredContent);
      // The task goes on, and no cancellation names it any more.
      expect(taskRow(taskId)).toEqual({ status: 'working', call_request_id: null });
      expect(timeline(taskId).at(-1)).toMatchObject({ status: 'working', actor: 'system', message: expect.stringContaining('answered before the task ended') });

      const { result, calls } = await resultOf((id) => client.callTool({ name: 'task_result', arguments: { taskId: id } }, clientTimeout), taskId);
      expect(calls).toBeGreaterThan(1);
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'Waited 6 s.' }] });
      expect(result.isError).toBeFalsy();
      // Once ended, the result comes at once, as often as it is asked for.
      expect(await client.callTool({ name: 'task_result', arguments: { taskId } })).toEqual(result);
    } finally {
      await close();
    }
  });

  it('is answered early to the SDK 1.x client, whose ask_human a person answers in the dashboard while it polls task_result', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      // Listing makes the SDK validate every result against the outputSchema: the early answer must fit it too.
      const { tools } = await client.listTools();
      const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
      expect(Object.keys(byName)).toEqual(expect.arrayContaining(['task_result', 'task_status', 'task_cancel', 'task_list']));
      expect(byName.ask_human.outputSchema).toMatchObject({ type: 'object', anyOf: [expect.objectContaining({ required: ['action', 'answeredBy'] }), expect.objectContaining({ required: ['taskId', 'status', 'pollAfterSeconds'] })] });
      expect(byName.task_result.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
      expect(byName.task_cancel.annotations).toMatchObject({ destructiveHint: true });

      const first: any = await client.callTool({ name: 'ask_human', arguments: { question: 'Ship it?' } }, CallToolResultSchema, { timeout: 4000 });
      const { taskId, status } = first.structuredContent;
      expect(status).toBe('input_required');
      expect(first.content[0].text).toContain(`${server.url}/tasks/${taskId}`);

      const polling = resultOf((id) => client.callTool({ name: 'task_result', arguments: { taskId: id } }, CallToolResultSchema, { timeout: 4000 }), taskId);
      await sleep(2 * windowMs);
      await answerInDashboard(server, 'ada@example.com', taskId, 'yes, ship it');
      const { result } = await polling;
      expect(result.structuredContent).toEqual({ action: 'accept', answeredBy: 'dashboard', content: { answer: 'yes, ship it' } });
      expect(result.content[0].text).toContain('yes, ship it');
    } finally {
      await close();
    }
  });

  it('asks a question on the task_result call that waits when the task asks it', async () => {
    const asked: any[] = [];
    const { client, close } = await connectSdk2Client(server.mcpUrl, token, {
      elicit: async (params) => {
        asked.push(params);
        return { action: 'accept', content: { go: true } };
      },
    });
    try {
      const first: any = await client.callTool({ name: 'fixture_ask_later', arguments: { waitMs: windowMs + 1000 } }, { timeout: 4000 });
      expect(first.structuredContent.status).toBe('working');
      expect(asked).toEqual([]);
      const { result } = await resultOf((id) => client.callTool({ name: 'task_result', arguments: { taskId: id } }, { timeout: 4000 }), first.structuredContent.taskId);
      expect(asked.map((params) => params.message)).toEqual(['Go on?']);
      // Asked on a call that made no task: nothing names one.
      expect(asked[0]._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
      expect(result.content[0].text).toBe('Answered accept: {"go":true}');
    } finally {
      await close();
    }
  });

  it('does not ask again on task_result what the client was still answering when the call was answered early', async () => {
    const asked: string[] = [];
    const { client, close } = await connectSdk2Client(server.mcpUrl, token, {
      elicit: async (params) => {
        asked.push(params.message);
        // The first answer takes longer than the window: the call is answered before it.
        if (params.message === 'First?') await sleep(windowMs + 1500);
        return { action: 'accept', content: { answer: `to ${params.message}` } };
      },
    });
    try {
      const first: any = await client.callTool({ name: 'survey', arguments: { questions: ['First?', 'Second?'] } }, { timeout: 4000 });
      expect(first.structuredContent.status).toBe('input_required');
      const { result } = await resultOf((id) => client.callTool({ name: 'task_result', arguments: { taskId: id } }, { timeout: 4000 }), first.structuredContent.taskId);
      expect(asked.sort()).toEqual(['First?', 'Second?']);
      expect(result.structuredContent.answers.map((answer: any) => [answer.answer, answer.answeredBy])).toEqual([
        ['to First?', 'client'],
        ['to Second?', 'client'],
      ]);
    } finally {
      await close();
    }
  });

  it('waits to the end for a client with tasks, which sees none of the extra tools', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token, { capabilities: { tasks: { list: {}, cancel: {} } } });
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).filter((name) => name.startsWith('task_'))).toEqual([]);
      expect(tools.find((tool) => tool.name === 'ask_human')!.outputSchema).not.toHaveProperty('anyOf');
      const result: any = await client.callTool({ name: 'delay', arguments: { seconds: 2.5 } });
      expect(result.content[0].text).toBe('Waited 2.5 s.');
    } finally {
      await close();
    }
  });

  it('gives each client the window set for its name', async () => {
    const timed = async (name: string) => {
      const { client, close } = await connectSdk2Client(server.mcpUrl, token, { name });
      try {
        const started = Date.now();
        const result: any = await client.callTool({ name: 'delay', arguments: { seconds: 3 } });
        return { after: Date.now() - started, early: stillRunning(result) };
      } finally {
        await close();
      }
    };
    const [eager, patient] = await Promise.all([timed('eager-client'), timed('patient client')]);
    expect(eager.early).toBe(true);
    expect(eager.after).toBeLessThan(windowMs);
    // Names are matched whatever their case; the patient client's 8 s outlast the job.
    expect(patient.early).toBe(false);
    expect(patient.after).toBeGreaterThanOrEqual(3000);
  });

  it('restarted between the early answer and task_result, still has the result', async () => {
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize('2025-11-25', {});
    const first = await mcp.call('tools/call', { name: 'delay', arguments: { seconds: 3 } });
    const { taskId } = first.structuredContent;
    await server.restart();
    const again = new RawMcp(server.mcpUrl, token);
    await again.initialize('2025-11-25', {});
    const { result } = await resultOf((id) => again.call('tools/call', { name: 'task_result', arguments: { taskId: id } }), taskId);
    expect(result.content).toEqual([{ type: 'text', text: 'Waited 3 s.' }]);
  });
});

describe('a timeout is not a decision', () => {
  it('goes on when the client gives up on its own timeout, and stops when it cancels', async () => {
    // The patient client's window (8 s) outlasts its own timeout (1.5 s): the SDK cancels, saying why.
    const { client, close } = await connectSdk2Client(server.mcpUrl, token, { name: 'Patient Client' });
    try {
      await expect(client.callTool({ name: 'delay', arguments: { seconds: 4 } }, { timeout: 1500 })).rejects.toThrow(/timed out/i);
      const timedOut = (await client.callTool({ name: 'task_list', arguments: { limit: 1 } })) as any;
      const taskId = timedOut.structuredContent.tasks[0].taskId;
      await expect.poll(() => timeline(taskId).at(-1)?.message, { timeout: 5000 }).toContain('stopped waiting for the call (its own timeout)');
      expect(taskRow(taskId)).toEqual({ status: 'working', call_request_id: null });

      const stop = new AbortController();
      const cancelled = client.callTool({ name: 'delay', arguments: { seconds: 4 } }, { signal: stop.signal });
      await sleep(500);
      stop.abort(new Error('The person pressed stop'));
      await expect(cancelled).rejects.toThrow();
      const listed = (await client.callTool({ name: 'task_list', arguments: { limit: 2 } })) as any;
      const [latest, earlier] = listed.structuredContent.tasks;
      expect(earlier.taskId).toBe(taskId);
      await expect.poll(() => taskRow(latest.taskId).status, { timeout: 5000 }).toBe('cancelled');

      const { result } = await resultOf((id) => client.callTool({ name: 'task_result', arguments: { taskId: id } }), taskId);
      expect(result.content[0].text).toBe('Waited 4 s.');
    } finally {
      await close();
    }
  });

  it('cancels nothing when a call is cancelled after its early answer', async () => {
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize('2025-11-25', {});
    const response = await mcp.post({ jsonrpc: '2.0', id: 'long-one', method: 'tools/call', params: { name: 'delay', arguments: { seconds: 3 } } });
    const reader = new SseReader(response);
    let answer: any;
    while (!answer) {
      const message = await reader.nextMessage(10_000);
      if (message?.id === 'long-one') answer = message.result;
    }
    const { taskId } = answer.structuredContent;
    const cancel = await mcp.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long-one', reason: 'The person pressed stop' } });
    expect(cancel.status).toBe(202);
    await sleep(300);
    expect(taskRow(taskId).status).toBe('working');
    const { result } = await resultOf((id) => mcp.call('tools/call', { name: 'task_result', arguments: { taskId: id } }), taskId);
    expect(result.content[0].text).toBe('Waited 3 s.');
  });
});

describe('the tools for clients without tasks', () => {
  it('know only the person’s own tasks, and refuse bad arguments with a clear error', async () => {
    const ada = new RawMcp(server.mcpUrl, token);
    await ada.initialize('2025-11-25', {});
    const bob = new RawMcp(server.mcpUrl, otherToken);
    await bob.initialize('2025-11-25', {});
    const { taskId } = (await ada.call('tools/call', { name: 'delay', arguments: { seconds: 30 } })).structuredContent;

    for (const name of ['task_result', 'task_status', 'task_cancel']) {
      const foreign = await bob.call('tools/call', { name, arguments: { taskId } });
      const missing = await bob.call('tools/call', { name, arguments: { taskId: 'no-such-task' } });
      expect(foreign.isError).toBe(true);
      // Someone else's task and one that does not exist read the same, so ids cannot be probed.
      expect(foreign.content[0].text.replace(taskId, 'ID')).toBe(missing.content[0].text.replace('no-such-task', 'ID'));
      expect(missing.content[0].text).toMatch(/^Unknown task: no-such-task/);
      const wrongType = await ada.call('tools/call', { name, arguments: { taskId: 42 } });
      expect(wrongType.isError).toBe(true);
      expect(wrongType.content[0].text).toMatch(new RegExp(`^Invalid arguments for tool ${name}: taskId:`));
    }
    expect((await bob.call('tools/call', { name: 'task_list', arguments: {} })).structuredContent.tasks.map((task: any) => task.taskId)).not.toContain(taskId);
    const badLimit = await ada.call('tools/call', { name: 'task_list', arguments: { limit: 500 } });
    expect(badLimit.isError).toBe(true);
    expect(taskRow(taskId).status).toBe('working');

    const status = await ada.call('tools/call', { name: 'task_status', arguments: { taskId } });
    expect(status.structuredContent).toMatchObject({ taskId, toolName: 'delay', status: 'working' });
    const working = await ada.call('tools/call', { name: 'task_list', arguments: { status: 'working', limit: 5 } });
    expect(working.structuredContent.tasks[0]).toMatchObject({ taskId, status: 'working' });

    const cancelled = await ada.call('tools/call', { name: 'task_cancel', arguments: { taskId } });
    expect(cancelled.structuredContent).toMatchObject({ taskId, status: 'cancelled' });
    // Cancelling again says the same; the result of a cancelled task is the error the call would have had.
    expect((await ada.call('tools/call', { name: 'task_cancel', arguments: { taskId } })).structuredContent.status).toBe('cancelled');
    const result = await ada.error('tools/call', { name: 'task_result', arguments: { taskId } });
    expect(result.message).toMatch(new RegExp(`^Task ${taskId} was cancelled`));

    const done = (await ada.call('tools/call', { name: 'delay', arguments: { seconds: 0 } })).content[0].text;
    expect(done).toBe('Waited 0 s.');
    const [finished] = (await ada.call('tools/call', { name: 'task_list', arguments: { limit: 1 } })).structuredContent.tasks;
    const refused = await ada.call('tools/call', { name: 'task_cancel', arguments: { taskId: finished.taskId } });
    expect(refused).toMatchObject({ isError: true, content: [{ text: `Task ${finished.taskId} has already ended (completed); it cannot be cancelled.` }] });
  });

  it('are offered to 2026-07-28 requests without the tasks extension, whose task_result waits one round', async () => {
    const plain = new ModernMcp(server.mcpUrl, token);
    const withTasks = new ModernMcp(server.mcpUrl, token, { extensions: { [tasksExtension]: {} } });
    const names = async (mcp: ModernMcp) => ((await mcp.call('tools/list')).tools as Array<{ name: string }>).map((tool) => tool.name).filter((name) => name.startsWith('task_'));
    expect(await names(plain)).toEqual(['task_result', 'task_status', 'task_cancel', 'task_list']);
    expect(await names(withTasks)).toEqual([]);
    const created = await withTasks.call('tools/call', { name: 'delay', arguments: { seconds: 1 } });
    const result = await plain.call('tools/call', { name: 'task_result', arguments: { taskId: created.taskId } });
    expect(result.content).toEqual([{ type: 'text', text: 'Waited 1 s.' }]);
  });
});
