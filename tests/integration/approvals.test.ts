import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callServerAction, setPassword, signIn } from '../helpers/dashboard';
import { connectSdkClient, RawMcp, sleep } from '../helpers/mcp';
import { ModernMcp, tasksExtension } from '../helpers/modern';
import { createToken, startServer, type TestServer } from '../helpers/server';

/**
 * A tool of an upstream server listed in `approve` runs only once a person approves the call in the
 * dashboard: the approval is never sent to the MCP client, no client can answer it, and a denial ends
 * the task with an error result naming who denied it. Against the reference server-everything over stdio.
 */

const email = 'ada@example.com';
const password = 'correct horse battery staple';
let server: TestServer;
let token: string;
let serversDir: string;
let sessionCookie: string | undefined;

const everything = path.resolve(__dirname, '..', '..', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');

beforeAll(async () => {
  serversDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-approvals-'));
  const file = path.join(serversDir, 'servers.json');
  fs.writeFileSync(file, JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everything, 'stdio'], approve: ['echo'] } } }));
  server = await startServer({ MCP_SERVERS_FILE: file, TASK_POLL_INTERVAL_MS: '200' });
  token = createToken(server, email);
  const set = setPassword(server, email, password);
  if (set.status !== 0) throw new Error(`Setting the password failed: ${set.stderr}`);
  ({ sessionCookie } = await signIn(server, email, password));
  // The upstream starts with the server's runtime: its tools are listed once it is up.
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  const deadline = Date.now() + 40_000;
  while (!(await mcp.call('tools/list')).tools.some((tool: { name: string }) => tool.name === 'everything__echo')) {
    if (Date.now() > deadline) throw new Error(`everything__echo was never listed:\n${server.output()}`);
    await sleep(200);
  }
}, 90_000);

afterAll(async () => {
  await server?.stop();
  if (serversDir) fs.rmSync(serversDir, { recursive: true, force: true });
});

interface InputRow {
  id: string;
  task_id: string;
  key: string;
  kind: string;
  status: string;
  request: unknown;
  answered_by: string | null;
  answered_by_label: string | null;
}

const json = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value);

/** The one open approval (tests run one at a time), once the task has asked for it. */
async function pendingApproval(taskId?: string): Promise<InputRow> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const rows = server.db().prepare("SELECT * FROM task_inputs WHERE kind = 'approval' AND status = 'pending'").all() as InputRow[];
    const found = rows.filter((row) => taskId === undefined || row.task_id === taskId);
    if (found.length === 1) return found[0];
    if (Date.now() > deadline) throw new Error(`expected one open approval, found ${found.length}`);
    await sleep(100);
  }
}

/** Presses Approve or Deny the way the dashboard's buttons do: the server action, as the signed-in person. */
async function decide(input: InputRow, decision: 'approve' | 'deny') {
  const form = new FormData();
  form.set('_1_decision', decision);
  form.set('0', JSON.stringify([input.id, { ok: false }, '$K1']));
  return callServerAction(server, {
    page: `/tasks/${input.task_id}`,
    filename: 'app/(dashboard)/tasks/[taskId]/input-actions.ts',
    exportedName: 'decideApprovalAction',
    body: form,
    cookie: sessionCookie,
  });
}

async function elicitingClient() {
  const sdk = await connectSdkClient(server.mcpUrl, token, { capabilities: { elicitation: { form: {} } } });
  const asked: unknown[] = [];
  sdk.client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: 'accept', content: {} };
  });
  return { ...sdk, asked };
}

describe('a tool that needs approval', () => {
  it('waits for a person, is never asked of the client nor answered by it, and runs once approved in the dashboard', async () => {
    const { client, transport, asked, close } = await elicitingClient();
    try {
      const messages: any[] = [];
      const done = (async () => {
        for await (const message of client.experimental.tasks.callToolStream(
          { name: 'everything__echo', arguments: { message: 'ship it' } },
          CallToolResultSchema,
          { task: {}, timeout: 60_000 },
        )) {
          messages.push(message);
        }
      })();
      const input = await pendingApproval();
      const taskId = input.task_id;
      expect(json(input.request)).toEqual({ server: 'everything', tool: 'echo', arguments: { message: 'ship it' } });
      const waiting = await client.experimental.tasks.getTask(taskId);
      expect(waiting.status).toBe('input_required');
      expect(waiting.statusMessage).toBe(`Waiting for a person to approve echo on everything in the dashboard: ${server.url}/tasks/${taskId}`);

      // The client's own answer, in any shape, is refused on its session: an agent does not approve its own call.
      const raw = new RawMcp(server.mcpUrl, token);
      raw.sessionId = transport.sessionId;
      for (const result of [{ action: 'accept', content: {} }, { task: { taskId: 'mine', status: 'working' } }]) {
        const reply = await raw.post({ jsonrpc: '2.0', id: `input:${input.id}:forged`, result });
        expect(reply.status).toBe(400);
        expect((await reply.json()).error.message).toContain('An approval is answered by a person in the dashboard, never by an MCP client');
      }
      expect(server.db().prepare('SELECT status, client_task_id FROM task_inputs WHERE id = ?').get(input.id)).toEqual({ status: 'pending', client_task_id: null });

      const pressed = await decide(input, 'approve');
      expect(pressed.status).toBe(200);
      await done;
      const final = messages.at(-1);
      expect(final.type).toBe('result');
      expect(final.result.content).toEqual([{ type: 'text', text: 'Echo: ship it' }]);
      expect(final.result.isError).toBeUndefined();
      expect(asked).toEqual([]);

      expect(server.db().prepare('SELECT answered_by, answered_by_label FROM task_inputs WHERE id = ?').get(input.id)).toEqual({ answered_by: 'dashboard', answered_by_label: email });
      // In the timeline: who approved, when.
      const timeline = server.db().prepare('SELECT to_status, actor, status_message FROM task_events WHERE task_id = ? ORDER BY id').all(taskId);
      expect(timeline).toEqual([
        expect.objectContaining({ to_status: 'working' }),
        { to_status: 'input_required', actor: 'system', status_message: waiting.statusMessage },
        { to_status: 'working', actor: 'dashboard', status_message: `Approved by ${email} in the dashboard; working.` },
        expect.objectContaining({ to_status: 'completed' }),
      ]);
      // Decided once: a second press is told who decided first.
      expect((await decide(input, 'deny')).text).toContain(`This call was already approved in the dashboard by ${email}`);
    } finally {
      await close();
    }
  });

  it('denied, ends with an error result that names who denied it', async () => {
    const { client, asked, close } = await elicitingClient();
    try {
      // A plain call: it becomes a task too, and waits on the call for the person.
      const called = client.callTool({ name: 'everything__echo', arguments: { message: 'drop the table' } }, CallToolResultSchema, { timeout: 60_000 });
      const input = await pendingApproval();
      expect((await decide(input, 'deny')).status).toBe(200);
      const result = await called;
      expect(result.isError).toBe(true);
      expect(result.content).toEqual([{ type: 'text', text: `Denied by ${email} in the dashboard: everything did not run echo.` }]);
      expect(asked).toEqual([]);
      const task = server.db().prepare('SELECT status, status_message FROM tasks WHERE id = ?').get(input.task_id) as { status: string; status_message: string };
      expect(task.status).toBe('failed');
      expect(task.status_message).toContain(`Denied by ${email} in the dashboard`);
    } finally {
      await close();
    }
  });

  it('is the only kind that waits: a tool not listed in approve runs at once', async () => {
    const { client, close } = await elicitingClient();
    try {
      const result = await client.callTool({ name: 'everything__get-sum', arguments: { a: 2, b: 3 } }, CallToolResultSchema);
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.content)).toContain('5');
      const task = server.db().prepare("SELECT id FROM tasks WHERE tool_name = 'everything__get-sum'").get() as { id: string };
      expect(Number((server.db().prepare('SELECT COUNT(*) AS n FROM task_inputs WHERE task_id = ?').get(task.id) as { n: unknown }).n)).toBe(0);
    } finally {
      await close();
    }
  });

  it('in the 2026-07-28 era: tasks/get lists no input request for it, and tasks/update cannot answer it', async () => {
    const mcp = new ModernMcp(server.mcpUrl, token, { elicitation: { form: {} }, extensions: { [tasksExtension]: {} } });
    const created = await mcp.call('tools/call', { name: 'everything__echo', arguments: { message: 'from the new era' } });
    expect(created.resultType).toBe('task');
    const input = await pendingApproval(created.taskId);
    const waiting = await mcp.call('tasks/get', { taskId: created.taskId });
    expect(waiting.status).toBe('input_required');
    expect(waiting.inputRequests ?? {}).toEqual({});
    expect(waiting.statusMessage).toContain('Waiting for a person to approve echo on everything in the dashboard');

    const answered = await mcp.request('tasks/update', { taskId: created.taskId, inputResponses: { [input.key]: { action: 'accept', content: {} } } });
    expect(answered.body.error.code).toBe(-32602);
    expect(answered.body.error.message).toContain('An approval is answered by a person in the dashboard, never by an MCP client');
    expect((server.db().prepare('SELECT status FROM task_inputs WHERE id = ?').get(input.id) as { status: string }).status).toBe('pending');

    expect((await decide(input, 'approve')).status).toBe(200);
    const deadline = Date.now() + 20_000;
    let task = await mcp.call('tasks/get', { taskId: created.taskId });
    while (task.status !== 'completed' && Date.now() < deadline) {
      await sleep(200);
      task = await mcp.call('tasks/get', { taskId: created.taskId });
    }
    expect(task.status).toBe('completed');
    expect(task.result.content).toEqual([{ type: 'text', text: 'Echo: from the new era' }]);
  });

  // Last: it restarts the server.
  it('survives a restart while it waits: the same approval, given after it, lets the call run', async () => {
    const before = new RawMcp(server.mcpUrl, token);
    await before.initialize();
    const { task } = await before.call('tools/call', { name: 'everything__echo', arguments: { message: 'after the restart' }, task: {} });
    const input = await pendingApproval(task.taskId);
    await server.restart();
    const after = new RawMcp(server.mcpUrl, token);
    await after.initialize();
    // Taken up again once the upstream is back, still waiting for the approval it asked for.
    const attempt = () => Number((server.db().prepare('SELECT attempt FROM tasks WHERE id = ?').get(task.taskId) as { attempt: unknown }).attempt);
    await expect.poll(attempt, { timeout: 40_000 }).toBe(2);
    expect((await after.call('tasks/get', { taskId: task.taskId })).status).toBe('input_required');
    expect((await pendingApproval(task.taskId)).id).toBe(input.id);

    expect((await decide(input, 'approve')).status).toBe(200);
    const result = await after.call('tasks/result', { taskId: task.taskId });
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: after the restart' }]);
  });
});
