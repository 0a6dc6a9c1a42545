import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installSuite, installTimeoutMs, suiteDir } from '../helpers/conformance';
import { createToken, startServer, type TestServer } from '../helpers/server';

/**
 * Claude Desktop reaches remote servers through mcp-remote, a stdio bridge (pinned in tests/conformance),
 * and gives a tool call the SDK's default 60 s. A 75 s job, with every default of ours (an answer within
 * 45 s) and of the client's: the call is answered "still running", and task_result returns the result.
 */

let server: TestServer;
let token: string;
const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-remote-'));

beforeAll(async () => {
  installSuite();
  server = await startServer({});
  token = createToken(server, 'ada@example.com');
}, installTimeoutMs + 60_000);

afterAll(async () => {
  await server?.stop();
  fs.rmSync(configDir, { recursive: true, force: true });
});

describe('mcp-remote, Claude Desktop’s bridge', () => {
  it('finishes a 75 s job that outlasts the client’s 60 s', { timeout: 150_000 }, async () => {
    const bridge = path.join(suiteDir, 'node_modules', 'mcp-remote', 'dist', 'proxy.js');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bridge, server.mcpUrl, '--transport', 'http-only', '--header', `Authorization: Bearer ${token}`],
      env: { PATH: process.env.PATH ?? '', HOME: configDir, MCP_REMOTE_CONFIG_DIR: configDir },
      stderr: 'pipe',
    });
    let bridgeLog = '';
    transport.stderr?.on('data', (chunk) => (bridgeLog += String(chunk)));
    const client = new Client({ name: 'claude-ai', version: '0.1.0' });
    try {
      await client.connect(transport);
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(['delay', 'task_result', 'task_status', 'task_cancel', 'task_list']));

      const started = Date.now();
      // The client's own options: the SDK's default timeout (60 s), not reset by progress.
      const first: any = await client.callTool({ name: 'delay', arguments: { seconds: 75 } });
      const answeredAfter = Date.now() - started;
      expect(answeredAfter).toBeGreaterThanOrEqual(45_000);
      expect(answeredAfter).toBeLessThan(60_000);
      const { taskId, status } = first.structuredContent;
      expect(status).toBe('working');
      expect(first.content[0].text).toContain(`task_result with {"taskId": "${taskId}"}`);

      let result: any = first;
      while (result.structuredContent?.pollAfterSeconds !== undefined) {
        result = await client.callTool({ name: 'task_result', arguments: { taskId } });
      }
      expect(Date.now() - started).toBeGreaterThanOrEqual(75_000);
      expect(result.content).toEqual([{ type: 'text', text: 'Waited 75 s.' }]);
      // The bridge adds itself to the client's name: a window set for "claude-ai" applies (CALL_ANSWER_WITHIN_MS_BY_CLIENT).
      const session = server.db().prepare('SELECT client_name AS name FROM mcp_sessions ORDER BY created_at DESC LIMIT 1').get() as { name: string };
      expect(session.name).toMatch(/^claude-ai \(via mcp-remote \d/);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nmcp-remote said:\n${bridgeLog.slice(-3000)}`);
    } finally {
      await client.close();
    }
  });
});
