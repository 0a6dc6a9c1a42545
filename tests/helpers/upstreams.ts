import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './server';

const root = path.resolve(__dirname, '..', '..');

/** The reference server that exercises every MCP feature, as published (a development dependency). */
export const everythingServer = path.join(root, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');

/** A servers file entry that runs server-everything over stdio; `mark` tells its child apart in /proc. */
export function everythingOverStdio(mark: string, options: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [everythingServer, 'stdio'], env: { UPSTREAM_MARK: mark }, ...options };
}

/** Writes a servers file in a fresh folder; returns its path. */
export function writeServersFile(servers: Record<string, unknown>): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-servers-')), 'servers.json');
  fs.writeFileSync(file, JSON.stringify({ mcpServers: servers }, null, 2));
  return file;
}

/** server-everything in its Streamable HTTP mode, as a process of its own on a loopback port. */
export async function startEverythingOverHttp(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [everythingServer, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (chunk) => (log += chunk));
  child.stderr!.on('data', (chunk) => (log += chunk));
  const deadline = Date.now() + 20_000;
  while (!log.includes('listening on port')) {
    if (child.exitCode !== null) throw new Error(`server-everything exited with ${child.exitCode}: ${log}`);
    if (Date.now() > deadline) throw new Error(`server-everything did not start: ${log}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The pids of the processes whose environment holds UPSTREAM_MARK=<mark> (a stdio server's children). */
export function pidsMarked(mark: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = fs.readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (environ.includes(`UPSTREAM_MARK=${mark}`)) pids.push(Number(entry));
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}

/**
 * An MCP server of the tests' own over Streamable HTTP (the official SDK's server): its tool `add_tool`
 * adds a tool, so its list changes while it runs and it says so (notifications/tools/list_changed).
 */
export async function startChangingUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const http = await import('node:http');
  const { randomUUID } = await import('node:crypto');
  const servers = new Set<InstanceType<typeof McpServer>>();
  const transports = new Map<string, InstanceType<typeof StreamableHTTPServerTransport>>();
  let added = 0;
  const addTo = (server: InstanceType<typeof McpServer>, n: number) =>
    server.registerTool(`added_${n}`, { description: `Added tool number ${n}` }, async () => ({ content: [{ type: 'text', text: `I am added_${n}` }] }));
  const build = () => {
    const server = new McpServer({ name: 'changing', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    server.registerTool('add_tool', { description: 'Adds a tool to this server' }, async () => {
      added += 1;
      for (const each of servers) addTo(each, added);
      return { content: [{ type: 'text', text: `added_${added}` }] };
    });
    for (let n = 1; n <= added; n += 1) addTo(server, n);
    servers.add(server);
    return server;
  };
  const httpServer = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const parsed = body ? JSON.parse(body) : undefined;
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (parsed?.method !== 'initialize') {
        res.writeHead(404).end();
        return;
      }
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (id) => void transports.set(id, created) });
      await build().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, parsed);
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      for (const server of servers) await server.close().catch(() => {});
      httpServer.closeAllConnections();
      await new Promise((resolve) => httpServer.close(resolve));
    },
  };
}

/**
 * An upstream that misbehaves, in raw JSON over HTTP: `garbage` answers with a result that is not a
 * CallToolResult, `huge` with one of 5 MiB, `silent` never answers, `error` with a JSON-RPC error.
 */
export async function startMisbehavingUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const http = await import('node:http');
  const tool = (name: string) => ({ name, description: `Misbehaves: ${name}`, inputSchema: { type: 'object', properties: {} } });
  const httpServer = http.createServer(async (req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = JSON.parse(body) as { id?: number; method: string; params?: { name?: string; _meta?: { progressToken?: string | number } } };
    if (message.id === undefined) return void res.writeHead(202).end();
    const reply = (result: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, ...(result as object) }));
    if (message.method === 'initialize') {
      return reply({ result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'misbehaving', version: '1.0.0' } } });
    }
    if (message.method === 'tools/list') return reply({ result: { tools: ['garbage', 'huge', 'silent', 'error', 'unstorable', 'unstorable_error'].map(tool) } });
    if (message.method !== 'tools/call') return reply({ error: { code: -32601, message: 'Method not found' } });
    const name = message.params?.name;
    if (name === 'garbage') return reply({ result: { content: 'not a list of blocks' } });
    if (name === 'huge') return reply({ result: { content: [{ type: 'text', text: 'x'.repeat(5 * 1024 * 1024) }] } });
    if (name === 'error') return reply({ error: { code: -32000, message: 'the upstream broke' } });
    // Text no PostgreSQL text column can hold (U+0000) or its JSON can take (a lone surrogate): in its
    // progress, its output and its failure.
    const unstorable = 'nul \u0000 and a lone \uD800 surrogate';
    if (name === 'unstorable_error') return reply({ error: { code: -32000, message: unstorable } });
    if (name === 'unstorable') {
      const event = (payload: unknown) => `event: message\ndata: ${JSON.stringify(payload)}\n\n`;
      const progressToken = message.params?._meta?.progressToken;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (progressToken !== undefined) res.write(event({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: 1, total: 2, message: unstorable } }));
      return void res.end(event({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: unstorable }], isError: true } }));
    }
    // silent: holds the request open and never answers.
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      httpServer.closeAllConnections();
      await new Promise((resolve) => httpServer.close(resolve));
    },
  };
}
