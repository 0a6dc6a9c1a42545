/**
 * The servers people already run: what this server adds to each call of one of their tools. The official
 * `@modelcontextprotocol/server-everything` is called directly with the SDK 1.x client, then through this
 * server (MCP_SERVERS_FILE), where its `echo` is offered as `everything__echo` and every call runs as a
 * durable task of ours; first with server-everything over stdio, then over Streamable HTTP. For each path:
 * latency of calls made one after another, then throughput of eight callers calling at once.
 *
 * Callers: directly over stdio, the eight share the one connection a stdio server has (as this server
 * shares its own); over HTTP, each caller has its own session. Through this server the calls are plain
 * `tools/call` (the task answered on the call) or task-augmented `tools/call` followed by `tasks/result`.
 * Nothing here asserts on a timing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectSdkClient } from '../tests/helpers/mcp';
import { startOurs, startReference, type Peer } from './peers';
import { fmt, fmtInt, groupCpuSeconds, markdownTable, processTreeCpuSeconds, runPool, sleep, type Samples } from './util';

export const gatewayConfig = {
  /** Calls one after another, for the latency percentiles. */
  sequential: Number(process.env.BENCH_GATEWAY_SEQUENTIAL ?? 300),
  /** Calls made by `callers` callers at once, for the throughput. */
  concurrent: Number(process.env.BENCH_GATEWAY_CONCURRENT ?? 2_000),
  callers: 8,
  /** Calls before measuring each path, so that neither side is measured cold. */
  warmUp: 100,
};

const root = path.resolve(__dirname, '..');
const everythingEntry = path.join(root, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const prefix = 'everything';

/** One echo call by caller `worker`; it throws unless the echo came back. */
type Call = (index: number, worker: number) => Promise<void>;

interface PathResult {
  name: string;
  /** The direct path this one goes through us in front of, for the added cost; none for a direct path. */
  direct?: PathResult;
  sequential: Samples;
  concurrent: Samples;
  /** CPU the servers (this one and server-everything) used per call while the callers called at once. */
  serverCpuMsPerCall: number;
  /** CPU the callers (the SDK clients, in this process) used per call meanwhile: they share the cores. */
  clientCpuMsPerCall: number;
}

function checkEcho(result: Record<string, unknown>, message: string): void {
  const content = result.content as Array<{ type: string; text?: string }> | undefined;
  const text = content?.[0]?.text;
  if (text !== `Echo: ${message}`) throw new Error(`unexpected reply: ${JSON.stringify(result).slice(0, 200)}`);
}

/** A plain tools/call of `tool`. */
function plainCall(clients: Client[], tool: string): Call {
  return async (index, worker) => {
    const message = `call ${index}`;
    const result = await clients[worker % clients.length].callTool({ name: tool, arguments: { message } }, CallToolResultSchema);
    checkEcho(result, message);
  };
}

/** A task-augmented tools/call, then tasks/result for that task. */
function taskCall(clients: Client[], tool: string): Call {
  return async (index, worker) => {
    const client = clients[worker % clients.length];
    const message = `task ${index}`;
    const created = await client.request(
      { method: 'tools/call', params: { name: tool, arguments: { message }, task: { ttl: 10 * 60_000 } } },
      CreateTaskResultSchema,
    );
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    checkEcho(result, message);
  };
}

async function measurePath(name: string, call: Call, serverCpuSeconds: () => number, direct?: PathResult): Promise<PathResult> {
  const { sequential: sequentialCalls, concurrent: concurrentCalls, callers, warmUp } = gatewayConfig;
  const warm = await runPool(warmUp, callers, call);
  if (warm.errors > 0) throw new Error(`${name}: ${warm.errors} of ${warmUp} warm-up calls failed: ${warm.firstError}`);
  const sequential = await runPool(sequentialCalls, 1, call);
  const cpuBefore = serverCpuSeconds();
  const concurrent = await runPool(concurrentCalls, callers, call);
  const calls = Math.max(1, concurrent.values.length);
  const serverCpuMsPerCall = ((serverCpuSeconds() - cpuBefore) * 1000) / calls;
  const clientCpuMsPerCall = (concurrent.clientCpuS * 1000) / calls;
  // Work a run leaves behind (tasks ending, rows written) must not count in the next.
  await sleep(500);
  return { name, direct, sequential, concurrent, serverCpuMsPerCall, clientCpuMsPerCall };
}

async function connectDirectHttp(url: string): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** Writes a servers file with one entry, `everything`, and returns its path. */
function writeServersFile(dir: string, entry: Record<string, unknown>): string {
  const file = path.join(dir, 'mcp-servers.json');
  // maxConcurrent well above the callers: the bench measures the gateway, not its queue.
  fs.writeFileSync(file, JSON.stringify({ mcpServers: { [prefix]: { ...entry, maxConcurrent: 64 } } }, null, 2));
  return file;
}

/** This server with the servers file, once its `everything__echo` is offered; both call shapes measured. */
async function throughOurs(
  label: string,
  serversFile: string,
  direct: PathResult,
  upstreamCpuSeconds: () => number,
  log: (message: string) => void,
): Promise<PathResult[]> {
  const ours = await startOurs({ MCP_SERVERS_FILE: serversFile });
  const sessions: Array<Awaited<ReturnType<typeof connectSdkClient>>> = [];
  try {
    for (let i = 0; i < gatewayConfig.callers; i++) sessions.push(await connectSdkClient(ours.url, ours.token, { name: 'bench' }));
    const tool = `${prefix}__echo`;
    const deadline = Date.now() + 60_000;
    while (!(await sessions[0].client.listTools()).tools.some((candidate) => candidate.name === tool)) {
      if (Date.now() > deadline) throw new Error(`${tool} was not offered within 60 s:\n${ours.server.output().slice(-2000)}`);
      await sleep(200);
    }
    const clients = sessions.map((session) => session.client);
    // The stdio child is in this server's process group; an HTTP server-everything is a group of its own.
    const cpu = () => groupCpuSeconds(ours.pgid) + upstreamCpuSeconds();
    const plain = await measurePath(`${label}: through this server, tools/call`, plainCall(clients, tool), cpu, direct);
    log(`gateway: ${plain.name} measured`);
    const tasks = await measurePath(`${label}: through this server, task + tasks/result`, taskCall(clients, tool), cpu, direct);
    log(`gateway: ${tasks.name} measured`);
    return [plain, tasks];
  } finally {
    await Promise.all(sessions.map((session) => session.close().catch(() => {})));
    await ours.stop();
  }
}

async function stdioPaths(dir: string, log: (message: string) => void): Promise<PathResult[]> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [everythingEntry, 'stdio'], stderr: 'ignore' });
  const client = new Client({ name: 'bench', version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => {};
  let direct: PathResult;
  try {
    await client.connect(transport);
    const pid = transport.pid;
    if (pid === null) throw new Error('server-everything (stdio) did not start');
    direct = await measurePath('stdio: server-everything directly', plainCall([client], 'echo'), () => processTreeCpuSeconds([pid]));
    log(`gateway: ${direct.name} measured`);
  } finally {
    await client.close();
  }
  const serversFile = writeServersFile(dir, { command: process.execPath, args: [everythingEntry, 'stdio'] });
  return [direct, ...(await throughOurs('stdio', serversFile, direct, () => 0, log))];
}

async function httpPaths(dir: string, log: (message: string) => void): Promise<PathResult[]> {
  const everything: Peer = await startReference();
  try {
    const upstreamCpu = () => groupCpuSeconds(everything.pgid);
    const clients: Client[] = [];
    let direct: PathResult;
    try {
      for (let i = 0; i < gatewayConfig.callers; i++) clients.push(await connectDirectHttp(everything.url));
      direct = await measurePath('Streamable HTTP: server-everything directly', plainCall(clients, 'echo'), upstreamCpu);
      log(`gateway: ${direct.name} measured`);
    } finally {
      for (const client of clients) {
        await (client.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => {});
        await client.close();
      }
    }
    const serversFile = writeServersFile(dir, { url: everything.url });
    return [direct, ...(await throughOurs('Streamable HTTP', serversFile, direct, upstreamCpu, log))];
  } finally {
    await everything.stop();
  }
}

function gatewayTable(results: PathResult[]): string {
  const rows = results.map((result) => {
    const { sequential, concurrent, direct } = result;
    const errors = sequential.errors + concurrent.errors;
    const firstError = sequential.firstError ?? concurrent.firstError;
    return [
      result.name,
      fmt(sequential.percentile(50)),
      fmt(sequential.percentile(95)),
      fmt(sequential.percentile(99)),
      fmtInt(concurrent.throughput()),
      fmt(result.serverCpuMsPerCall),
      fmt(result.clientCpuMsPerCall),
      direct ? `+${fmt(sequential.percentile(50) - direct.sequential.percentile(50))}` : '–',
      direct ? `${fmt(concurrent.throughput() / direct.concurrent.throughput())}×` : '–',
      errors ? `${errors} (${firstError?.slice(0, 120)})` : '0',
    ];
  });
  return markdownTable(
    ['path', 'p50 ms', 'p95 ms', 'p99 ms', `calls/s (${gatewayConfig.callers} callers)`, 'server CPU ms per call', 'client CPU ms per call', 'added at p50, ms', 'calls/s ÷ direct', 'errors'],
    rows,
  );
}

/** Both transports, direct and through this server, in one run; returns the markdown to print. */
export async function measureGateway(log: (message: string) => void): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-bench-gateway-'));
  try {
    const results = [...(await stdioPaths(dir, log)), ...(await httpPaths(dir, log))];
    const { sequential, concurrent, callers } = gatewayConfig;
    return [
      `Latency: ${fmtInt(sequential)} \`echo\` calls one after another; calls/s: ${fmtInt(concurrent)} calls by ${callers} callers at once. ` +
        'CPU per call while the callers called at once: server, this server and server-everything together (server-everything alone on the direct rows); ' +
        'client, the SDK clients in the bench process, on the same cores.',
      '',
      gatewayTable(results),
    ].join('\n');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
