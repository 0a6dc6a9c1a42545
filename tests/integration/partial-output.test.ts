import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setPassword, signIn } from '../helpers/dashboard';
import { RawMcp, SseReader } from '../helpers/mcp';
import { createToken, startServer, type TestServer } from '../helpers/server';

let server: TestServer;

beforeAll(async () => {
  server = await startServer({ MCP_FIXTURE_TOOLS: '1' });
});

afterAll(async () => {
  await server?.stop();
});

const outputOf = (taskId: string) => (server.db().prepare('SELECT partial_output AS output FROM tasks WHERE id = ?').get(taskId) as { output: string | null }).output;

describe('partial output', () => {
  it('reaches a client as progress messages, in order, with progress that always increases, and is kept with the task', async () => {
    const mcp = new RawMcp(server.mcpUrl, createToken(server, 'out@example.com'));
    await mcp.initialize();
    const response = await mcp.post({
      jsonrpc: '2.0',
      id: 'out',
      method: 'tools/call',
      params: { name: 'fixture_partial_output', arguments: { lines: 4, pauseMs: 50 }, _meta: { progressToken: 'out-token' } },
    });
    const reader = new SseReader(response);
    const progress: Array<{ progress: number; message?: string }> = [];
    let result: any;
    for (;;) {
      const message = await reader.nextMessage(20_000);
      if (!message) throw new Error('the stream ended without a result');
      if (message.method === 'notifications/progress') progress.push(message.params);
      if (message.id === 'out') {
        result = message.result;
        break;
      }
    }
    expect(result.content).toEqual([{ type: 'text', text: 'Wrote 4 lines and 0 chunks.' }]);
    expect(progress.map((entry) => entry.message).filter((message) => message?.startsWith('line '))).toEqual(['line 1', 'line 2', 'line 3', 'line 4']);
    for (let i = 1; i < progress.length; i++) expect(progress[i].progress).toBeGreaterThan(progress[i - 1].progress);
    expect(progress.every((entry) => (entry as { progressToken?: unknown }).progressToken === 'out-token')).toBe(true);

    const task = server.db().prepare("SELECT id FROM tasks WHERE tool_name = 'fixture_partial_output' ORDER BY created_at DESC").get() as { id: string };
    expect(outputOf(task.id)).toBe('line 1\nline 2\nline 3\nline 4\n');
  });

  it('keeps only the latest 64 KB of a large output, marked as cut, and shows it on the task’s page', async () => {
    const token = createToken(server, 'big@example.com');
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize();
    const { task } = await mcp.call('tools/call', { name: 'fixture_partial_output', arguments: { chunks: 10 }, task: {} });
    const result = await mcp.call('tasks/result', { taskId: task.taskId });
    expect(result.content[0].text).toBe('Wrote 0 lines and 10 chunks.');
    const output = outputOf(task.taskId)!;
    expect(output.length).toBe(64 * 1024);
    expect(output.startsWith('…\n')).toBe(true);
    expect(output.endsWith(`010:${'x'.repeat(9_995)}\n`)).toBe(true);
    expect(output).not.toContain('004:');
    // tasks/get carries no output: it stays as small as it was.
    expect(Object.keys(await mcp.call('tasks/get', { taskId: task.taskId }))).not.toContain('partialOutput');

    expect(setPassword(server, 'big@example.com', 'a long enough password').status).toBe(0);
    const { sessionCookie } = await signIn(server, 'big@example.com', 'a long enough password');
    const page = await (await fetch(`${server.url}/tasks/${task.taskId}`, { headers: { Cookie: sessionCookie! } })).text();
    expect(page).toContain('Output');
    expect(page).toContain('010:xxxxx');
  });
});
