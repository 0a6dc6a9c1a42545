import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fuzzRequest, sendFuzzRequest, type FuzzTargets } from '../fuzz/requests';
import { RawMcp } from '../helpers/mcp';
import { createToken, heapAfterGcEnv, heapAfterGcKib, startServer, type TestServer } from '../helpers/server';

/** Requests per property run, sent at once; `npm run fuzz` raises the number of runs. */
const requestsPerRun = 10;
const runs = Number(process.env.FUZZ_RUNS ?? 1000);

let server: TestServer;
let targets: FuzzTargets;
let ownResult: unknown;
let foreignResult: unknown;
let own: RawMcp;
let foreign: RawMcp;
let strangerOwner: string;

function strangerInputs(taskId: string) {
  return server.db().prepare('SELECT id, status, response, answered_by FROM task_inputs WHERE task_id = ?').all(taskId) as Array<{
    id: string;
    status: string;
    response: string | null;
    answered_by: string | null;
  }>;
}

/** A stranger's task as the database has it, with every status it ever had, in order. */
function strangerTask(taskId: string) {
  const db = server.db();
  const events = db.prepare('SELECT to_status FROM task_events WHERE task_id = ? ORDER BY id').all(taskId) as Array<{ to_status: string }>;
  return {
    ...(db.prepare('SELECT user_id AS owner, status FROM tasks WHERE id = ?').get(taskId) as { owner: string; status: string }),
    statuses: [...new Set(events.map((event) => event.to_status))],
  };
}

beforeAll(async () => {
  server = await startServer({
    RATE_LIMIT_PER_TOKEN: '0',
    RATE_LIMIT_PER_USER: '0',
    RATE_LIMIT_TASK_OPERATIONS_PER_USER: '0',
    RATE_LIMIT_UNKNOWN_TASKS_PER_USER: '0',
    TASK_MAX_ACTIVE_PER_USER: '1000000',
    TASK_MAX_STORED_PER_USER: '1000000',
    // Generated initialize requests open sessions; past the cap (npm run fuzz sends enough) they would end the fuzzer's own.
    MCP_MAX_SESSIONS_PER_USER: '1000000',
    LOG_LEVEL: 'warn',
    ...heapAfterGcEnv(),
  });
  const token = createToken(server, 'fuzzer@example.com');
  const foreignToken = createToken(server, 'bystander@example.com');
  own = new RawMcp(server.mcpUrl, token);
  await own.initialize();
  const batches = new RawMcp(server.mcpUrl, token);
  await batches.initialize('2025-03-26');
  foreign = new RawMcp(server.mcpUrl, foreignToken);
  await foreign.initialize();
  const stranger = new RawMcp(server.mcpUrl, createToken(server, 'stranger@example.com'));
  await stranger.initialize();
  const strangerTask = await stranger.startDelayTask(3600);
  const strangerQuestionTask = (await stranger.call('tools/call', { name: 'ask_human', arguments: { question: 'Mine to answer?' }, task: {} })).task;
  await vi.waitFor(() => expect(strangerInputs(strangerQuestionTask.taskId)).toHaveLength(1), { timeout: 10_000 });
  const ownTask = await own.startDelayTask(0);
  const foreignTask = await foreign.startDelayTask(0);
  ownResult = await own.call('tasks/result', { taskId: ownTask.taskId });
  foreignResult = await foreign.call('tasks/result', { taskId: foreignTask.taskId });
  targets = {
    mcpUrl: server.mcpUrl,
    token,
    foreignToken,
    sessionId: own.sessionId!,
    batchSessionId: batches.sessionId!,
    foreignSessionId: foreign.sessionId!,
    ownTaskId: ownTask.taskId,
    foreignTaskId: foreignTask.taskId,
    strangerTaskId: strangerTask.taskId,
    strangerQuestionTaskId: strangerQuestionTask.taskId,
    strangerInputId: strangerInputs(strangerQuestionTask.taskId)[0].id,
  };
  strangerOwner = (server.db().prepare('SELECT user_id FROM tasks WHERE id = ?').get(strangerTask.taskId) as { user_id: string }).user_id;
});

afterAll(async () => {
  await server?.stop();
});

async function fuzz(numRuns: number, seed?: number): Promise<void> {
  let firstProblems: string | undefined;
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(fuzzRequest(targets), { minLength: requestsPerRun, maxLength: requestsPerRun }), async (requests) => {
        const problems = (await Promise.all(requests.map((request) => sendFuzzRequest(targets.mcpUrl, request)))).filter(Boolean);
        if (problems.length === 0) return;
        firstProblems ??= problems.join('\n');
        throw new Error(problems.join('\n'));
      }),
      { numRuns, seed, endOnFailure: true },
    );
  } catch (error) {
    // fast-check's message leads with the counterexample, which can run to megabytes: say what was wrong first.
    if (firstProblems === undefined) throw error;
    throw new Error(`${firstProblems.slice(0, 2000)}\n${error instanceof Error ? error.message.slice(0, 2000) : error}`);
  }
}

describe('fuzzing the endpoint with generated requests', () => {
  it(`answers ${runs * requestsPerRun} malformed, mistyped, oversized and misaddressed requests with errors, never a 5xx, and loses nothing`, { timeout: Math.max(300_000, runs * 400) }, async () => {
    // A first tenth warms the server up, so that what it keeps afterwards is measured against a warm start.
    await fuzz(Math.ceil(runs / 10));
    const warmKib = await heapAfterGcKib(server);
    await fuzz(runs - Math.ceil(runs / 10));

    expect((await own.request('ping')).body).toEqual({ jsonrpc: '2.0', id: expect.any(Number), result: {} });
    expect(await own.call('tasks/result', { taskId: targets.ownTaskId })).toEqual(ownResult);
    expect(await foreign.call('tasks/result', { taskId: targets.foreignTaskId })).toEqual(foreignResult);
    expect((await foreign.request('ping')).status).toBe(200);
    // Nothing reached the third user's tasks: still theirs, never cancelled, the question still waiting.
    expect(strangerTask(targets.strangerTaskId)).toEqual({ owner: strangerOwner, status: 'working', statuses: ['working'] });
    expect(strangerTask(targets.strangerQuestionTaskId)).toEqual({ owner: strangerOwner, status: 'input_required', statuses: ['working', 'input_required'] });
    expect(strangerInputs(targets.strangerQuestionTaskId)).toEqual([{ id: targets.strangerInputId, status: 'pending', response: null, answered_by: null }]);
    // Nothing the requests carried is kept: once its garbage is collected, the server holds what it held
    // warm, give or take the sessions and tasks the requests rightly made (a few KiB each).
    expect(await heapAfterGcKib(server)).toBeLessThan(warmKib + 16 * 1024);
  });
});
