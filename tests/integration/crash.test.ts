import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawMcp, SseReader } from '../helpers/mcp';
import { createToken, startServer, type TestServer } from '../helpers/server';

/**
 * A short crash under load: many clients create, poll, answer and cancel tasks; the server is killed
 * with SIGKILL in the middle and started again. Whatever the server acknowledged must still be there,
 * exactly as it was acknowledged. `npm run soak` runs the same with more clients for longer.
 */
const clients = Number(process.env.CRASH_CLIENTS ?? 100);
const activityMs = Number(process.env.CRASH_ACTIVITY_MS ?? 4000);
const elicitCapable = { elicitation: { form: {} } };

let server: TestServer;

beforeAll(async () => {
  // Every client holds a session and, while it waits, a stream: `npm run soak` has more per user than the
  // default caps. A hundred clients on two tokens also send more than a minute's requests in seconds:
  // the rate limits (tested in abuse.test.ts) are off, so that every refusal here is a failure.
  const perUser = String(Math.max(100, clients));
  server = await startServer({
    RATE_LIMIT_PER_TOKEN: '0',
    RATE_LIMIT_PER_USER: '0',
    RATE_LIMIT_TASK_OPERATIONS_PER_USER: '0',
    TASK_MAX_ACTIVE_PER_USER: '100000',
    TASK_POLL_INTERVAL_MS: '250',
    MCP_MAX_SESSIONS_PER_USER: perUser,
    MCP_MAX_STREAMS_PER_USER: perUser,
  });
});

afterAll(async () => {
  await server?.stop();
});

interface Acknowledged {
  owner: RawMcp;
  taskId: string;
  tool: 'delay' | 'ask_human';
  /** The result tasks/result returned before the crash, as its exact JSON text. */
  result?: string;
  /** The answer the server took (202) before the crash. */
  answer?: string;
  cancelled?: boolean;
}

/**
 * One client's work until `stop`: start a task, poll it, answer or cancel it, wait for its result. An
 * error is expected only once `killing` is aborted (just before the kill): any earlier one is the
 * server failing under load, and is kept in `errorsBeforeKill` for the test to fail on.
 */
async function work(mcp: RawMcp, index: number, acknowledged: Acknowledged[], stop: AbortSignal, killing: AbortSignal, errorsBeforeKill: unknown[]): Promise<void> {
  for (let round = 0; !stop.aborted; round += 1) {
    const asks = (index + round) % 3 === 0;
    let entry: Acknowledged;
    try {
      const started = asks
        ? await mcp.call('tools/call', { name: 'ask_human', arguments: { question: `Client ${index}, round ${round}?` }, task: {} })
        : await mcp.call('tools/call', { name: 'delay', arguments: { seconds: 0.2 + (index % 5) * 0.3 }, task: {} });
      entry = { owner: mcp, taskId: started.task.taskId, tool: asks ? 'ask_human' : 'delay' };
      acknowledged.push(entry);
      await mcp.call('tasks/get', { taskId: entry.taskId });
      if (round % 4 === 3) {
        const cancel = await mcp.request('tasks/cancel', { taskId: entry.taskId });
        // A short delay may have completed first: the one refusal that is no failure.
        if (cancel.body?.error?.message !== "Cannot cancel task: already in terminal status 'completed'") {
          expect(cancel.body).toMatchObject({ result: { taskId: entry.taskId, status: 'cancelled' } });
          entry.cancelled = true;
        }
        continue;
      }
      const response = await mcp.post({ jsonrpc: '2.0', id: 10_000 + round, method: 'tasks/result', params: { taskId: entry.taskId } }, {}, stop);
      if (!response.headers.get('content-type')?.startsWith('text/event-stream')) {
        entry.result = JSON.stringify((await response.json()).result);
        continue;
      }
      const reader = new SseReader(response);
      for (;;) {
        const message = await reader.nextMessage(15_000);
        if (!message) break;
        if (message.method === 'elicitation/create') {
          const answer = `answer ${index}.${round}`;
          const reply = await mcp.post({ jsonrpc: '2.0', id: message.id, result: { action: 'accept', content: { answer } } });
          if (reply.status === 202) entry.answer = answer;
        } else if (message.id === 10_000 + round && 'result' in message) {
          const { __eventId, ...rest } = message;
          void __eventId;
          entry.result = JSON.stringify(rest.result);
          break;
        }
      }
    } catch (error) {
      // After the kill, the server died under this request: what it acknowledged before is what counts.
      if (!killing.aborted) errorsBeforeKill.push(error);
      return;
    }
  }
}

describe('kill -9 under load', () => {
  it('keeps every acknowledged task, every delivered result and every taken answer', async () => {
    const tokens = [createToken(server, 'crash-a@example.com'), createToken(server, 'crash-b@example.com')];
    const sessions = await Promise.all(
      Array.from({ length: clients }, async (_, index) => {
        const mcp = new RawMcp(server.mcpUrl, tokens[index % tokens.length]);
        await mcp.initialize('2025-11-25', elicitCapable);
        return mcp;
      }),
    );
    const acknowledged: Acknowledged[] = [];
    const stop = new AbortController();
    const killing = new AbortController();
    const errorsBeforeKill: unknown[] = [];
    const running = sessions.map((mcp, index) => work(mcp, index, acknowledged, stop.signal, killing.signal, errorsBeforeKill));
    // The kill comes after the activity time and once results and answers have been acknowledged (a busy
    // machine takes longer to get there): otherwise there would be nothing of theirs to check.
    const activityEnds = Date.now() + activityMs;
    const acknowledgedBoth = () => acknowledged.some((entry) => entry.result !== undefined) && acknowledged.some((entry) => entry.answer !== undefined);
    while (Date.now() < activityEnds || (!acknowledgedBoth() && Date.now() < activityEnds + 30_000)) await new Promise((resolve) => setTimeout(resolve, 100));
    killing.abort();
    await server.kill9();
    stop.abort();
    await Promise.all(running);
    expect(errorsBeforeKill.map(String)).toEqual([]);
    expect(acknowledged.length).toBeGreaterThan(clients);
    expect(acknowledged.some((entry) => entry.result !== undefined)).toBe(true);
    expect(acknowledged.some((entry) => entry.answer !== undefined)).toBe(true);

    await server.restart();
    const db = server.db();
    for (const entry of acknowledged) {
      // Every acknowledged task exists for its owner.
      const task = await entry.owner.call('tasks/get', { taskId: entry.taskId });
      expect(task.taskId).toBe(entry.taskId);
      if (entry.cancelled) expect(task.status).toBe('cancelled');
      // Every result returned before the crash is returned again, byte for byte.
      if (entry.result !== undefined) expect(JSON.stringify(await entry.owner.call('tasks/result', { taskId: entry.taskId }))).toBe(entry.result);
      if (entry.tool === 'ask_human') {
        const inputs = db.prepare('SELECT status, response FROM task_inputs WHERE task_id = ?').all(entry.taskId) as Array<{ status: string; response: string | null }>;
        // A question is never lost or asked twice; an answer the server took stays the answer.
        expect(inputs.length).toBeLessThanOrEqual(1);
        if (entry.answer !== undefined) {
          expect(inputs[0].status).toBe('answered');
          expect(JSON.parse(inputs[0].response!).content).toEqual({ answer: entry.answer });
        }
        if (task.status === 'input_required') expect(inputs.map((input) => input.status)).toEqual(['pending']);
      }
    }
    // No task is left working without a runner: the resumed delays finish, the questions keep waiting.
    await expect
      .poll(() => (db.prepare("SELECT count(*) AS n FROM tasks WHERE status = 'working'").get() as { n: number }).n, { timeout: 20_000, interval: 200 })
      .toBe(0);
    const waiting = db.prepare("SELECT t.id FROM tasks t WHERE t.status = 'input_required' AND NOT EXISTS (SELECT 1 FROM task_inputs i WHERE i.task_id = t.id AND i.status = 'pending')").all();
    expect(waiting).toEqual([]);
  }, activityMs + 120_000);
});
