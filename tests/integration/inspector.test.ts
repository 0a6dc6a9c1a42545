import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installSuite, installTimeoutMs, suiteBin, suiteDir, suiteManifest } from '../helpers/conformance';
import { createToken, startServer, type TestServer } from '../helpers/server';

/**
 * The MCP Inspector (its CLI, pinned in tests/conformance and run on that folder's Node 22, as it asks)
 * against the same /mcp in each of its protocol eras: `legacy` (initialize, the default), `modern`
 * (2026-07-28, pinned) and `auto` (server/discover first).
 */
const inspectorEntry = path.join(suiteDir, 'node_modules', '@modelcontextprotocol', 'inspector', 'package.json');

let server: TestServer;
let token: string;
let home: string;

beforeAll(async () => {
  installSuite();
  server = await startServer({});
  token = createToken(server, 'inspector@example.com');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-inspector-home-'));
}, installTimeoutMs + 60_000);

afterAll(async () => {
  await server?.stop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

/** Runs the Inspector's CLI with a config naming this server in one era; resolves with its exit code and output. */
function inspect(era: 'legacy' | 'modern' | 'auto', args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const config = path.join(home, `${era}.json`);
  fs.writeFileSync(
    config,
    JSON.stringify({ mcpServers: { tasks: { type: 'streamable-http', url: server.mcpUrl, headers: { Authorization: `Bearer ${token}` }, protocolEra: era } } }),
  );
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(suiteBin, 'node'), [path.join(suiteBin, 'mcp-inspector'), '--cli', '--config', config, '--server', 'tasks', ...args], {
      // Its catalog and settings go to a home of its own; secrets stay in memory (there is no keychain here).
      env: { ...process.env, HOME: home, MCP_INSPECTOR_SECRET_STORE: 'memory', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const latestDelayTask = () =>
  server.db().prepare("SELECT protocol_version, client_name, invocation, status FROM tasks WHERE tool_name = 'delay' ORDER BY created_at DESC LIMIT 1").get() as
    | { protocol_version: string; client_name: string; invocation: string; status: string }
    | undefined;

describe('the MCP Inspector', () => {
  it('is the version tests/conformance pins', () => {
    expect(JSON.parse(fs.readFileSync(inspectorEntry, 'utf8')).version).toBe(suiteManifest.dependencies['@modelcontextprotocol/inspector']);
  });

  for (const [era, protocolVersion] of [
    ['legacy', '2025-11-25'],
    ['modern', '2026-07-28'],
    ['auto', '2026-07-28'],
  ] as const) {
    it(`lists the tools and runs delay in its ${era} era, which this server serves as ${protocolVersion}`, async () => {
      const listed = await inspect(era, ['--method', 'tools/list']);
      expect(listed.code, listed.stderr).toBe(0);
      expect((JSON.parse(listed.stdout) as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name)).toEqual(
        expect.arrayContaining(['delay', 'echo', 'ask_human', 'survey', 'summarize']),
      );
      const called = await inspect(era, ['--method', 'tools/call', '--tool-name', 'delay', '--tool-arg', 'seconds=1']);
      expect(called.code, called.stderr).toBe(0);
      expect(JSON.parse(called.stdout).content).toEqual([{ type: 'text', text: 'Waited 1 s.' }]);
      expect(latestDelayTask()).toMatchObject({ protocol_version: protocolVersion, client_name: 'inspector-cli', status: 'completed' });
    });
  }
});
