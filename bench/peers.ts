/**
 * The servers the throughput bench compares, each started fresh on a free loopback port and stopped
 * with its whole process group: this server through the production server and through Next's route
 * handler, the official reference server, and a bare node:http fixed reply (the machine's ceiling);
 * and this server on PostgreSQL, one instance addressed directly or 1 to 3 instances behind HAProxy.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startCluster, type Cluster } from '../tests/helpers/cluster';
import { createTestDatabase } from '../tests/helpers/postgres';
import { createToken, freePort, startServer, type TestServer } from '../tests/helpers/server';
import { childrenNamed, groupCpuSeconds, postgresCpuSeconds, processTreeCpuSeconds } from './util';

const root = path.resolve(__dirname, '..');

export interface Peer {
  name: string;
  url: string;
  /** Headers every MCP request carries (auth), before a session exists. */
  headers: Record<string, string>;
  pgid: number;
  /** CPU seconds used so far, by part; when absent, the process group `pgid` is the whole server. */
  cpu?: () => CpuReading;
  stop(): Promise<void>;
}

/** CPU seconds used so far: the server's Node processes, and HAProxy and PostgreSQL where they take part. */
export interface CpuReading {
  node: number;
  haproxy?: number;
  postgres?: number;
}

async function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}:\n${log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`did not start:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function spawnGroup(command: string, args: string[], env: Record<string, string>): { child: ChildProcess; log: () => string } {
  let output = '';
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (chunk) => (output = (output + chunk).slice(-20_000)));
  child.stderr!.on('data', (chunk) => (output = (output + chunk).slice(-20_000)));
  return { child, log: () => output };
}

async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    return;
  }
  await exited;
}

/** Benchmarks measure the server, not its limits: both mounts run with these. */
export const withoutLimits = {
  TASK_MAX_ACTIVE_PER_USER: '100000',
  TASK_MAX_STORED_PER_USER: '100000000',
  RATE_LIMIT_PER_TOKEN: '0',
  RATE_LIMIT_PER_USER: '0',
  RATE_LIMIT_TASK_OPERATIONS_PER_USER: '0',
  RATE_LIMIT_UNKNOWN_TASKS_PER_USER: '0',
  MCP_MAX_SESSIONS_PER_USER: '1000000',
  MCP_MAX_STREAMS_PER_USER: '1000000',
};

/** This server as `npm start` runs it. */
export async function startOurs(env: Record<string, string> = {}): Promise<Peer & { server: TestServer; token: string }> {
  const server = await startServer({ ...withoutLimits, ...env });
  const token = createToken(server, 'bench@example.com', 'bench');
  return {
    name: 'this server (npm start: production server)',
    url: server.mcpUrl,
    headers: { Authorization: `Bearer ${token}` },
    pgid: server.pid(),
    server,
    token,
    stop: () => server.stop(),
  };
}

/**
 * This server as `npm start` runs it, on a fresh PostgreSQL database (TEST_DATABASE_URL's server, else an
 * embedded one, as in the tests), addressed directly. The pool has its default size (10).
 */
export async function startOursPostgres(): Promise<Peer & { server: TestServer; token: string }> {
  const database = await createTestDatabase();
  let server: TestServer;
  try {
    server = await startServer({ ...withoutLimits, DATABASE_URL: database.url });
  } catch (error) {
    await database.drop();
    throw error;
  }
  const token = createToken(server, 'bench@example.com', 'bench');
  return {
    name: 'PostgreSQL, 1 instance, direct',
    url: server.mcpUrl,
    headers: { Authorization: `Bearer ${token}` },
    pgid: server.pid(),
    cpu: () => ({ node: groupCpuSeconds(server.pid()), postgres: postgresCpuSeconds() }),
    server,
    token,
    stop: async () => {
      await server.stop();
      await database.drop();
    },
  };
}

/**
 * `instances` instances of this server on one fresh PostgreSQL database behind HAProxy with
 * deploy/haproxy.cfg (tests/helpers/cluster.ts); each instance's pool at the default size (10).
 */
export async function startClusterPeer(instances: number): Promise<Peer & { cluster: Cluster; token: string }> {
  const cluster = await startCluster({ instances, env: { ...withoutLimits, DATABASE_POOL_SIZE: '10' } });
  try {
    const token = createToken(cluster.instances[0], 'bench@example.com', 'bench');
    // startCluster spawns HAProxy as a direct child of this process, and only one cluster runs at a time.
    const haproxy = childrenNamed('haproxy');
    if (haproxy.length !== 1) throw new Error(`expected one HAProxy process, found ${haproxy.length}`);
    return {
      name: `PostgreSQL, ${instances} instance${instances === 1 ? '' : 's'} behind HAProxy`,
      url: cluster.mcpUrl,
      headers: { Authorization: `Bearer ${token}` },
      pgid: cluster.instances[0].pid(),
      cpu: () => ({
        node: cluster.instances.reduce((sum, instance) => sum + groupCpuSeconds(instance.pid()), 0),
        haproxy: processTreeCpuSeconds(haproxy),
        postgres: postgresCpuSeconds(),
      }),
      cluster,
      token,
      stop: () => cluster.stop(),
    };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** The same app through Next's own server (`next start`): /mcp served by app/mcp/route.ts. */
export async function startRouteHandler(): Promise<Peer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-bench-next-'));
  const port = await freePort();
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_PATH: path.join(dataDir, 'app.db'),
    NEXTAUTH_URL: `http://localhost:${port}`,
    NEXTAUTH_SECRET: 'bench-secret-bench-secret-bench-secret',
    NEXT_TELEMETRY_DISABLED: '1',
    ...withoutLimits,
  };
  const { child, log } = spawnGroup(process.execPath, [path.join(root, 'node_modules', 'next', 'dist', 'bin', 'next'), 'start', '--port', String(port), '--hostname', '127.0.0.1'], env);
  await waitForPort(port, child, log);
  const token = createToken({ env } as unknown as TestServer, 'bench@example.com', 'bench');
  return {
    name: 'this server (next start: route handler)',
    url: `http://localhost:${port}/mcp`,
    headers: { Authorization: `Bearer ${token}` },
    pgid: child.pid!,
    stop: async () => {
      await stopGroup(child);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The official reference server (SDK 1.x + Express, tasks in memory, no auth). */
export async function startReference(): Promise<Peer> {
  const port = await freePort();
  const entry = path.join(root, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  const { child, log } = spawnGroup(process.execPath, [entry, 'streamableHttp'], { PORT: String(port) });
  await waitForPort(port, child, log);
  return {
    name: 'reference server (server-everything)',
    url: `http://127.0.0.1:${port}/mcp`,
    headers: {},
    pgid: child.pid!,
    stop: () => stopGroup(child),
  };
}

/** A bare node:http server answering every request with one fixed JSON-RPC reply. */
export async function startBareNode(): Promise<Peer> {
  const port = await freePort();
  const script = `require('node:http').createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'Content-Type': 'application/json' }); res.end('{"jsonrpc":"2.0","id":1,"result":{}}'); }); }).listen(${port}, '127.0.0.1');`;
  const { child, log } = spawnGroup(process.execPath, ['-e', script], {});
  await waitForPort(port, child, log);
  return { name: 'bare node:http, fixed reply', url: `http://127.0.0.1:${port}/mcp`, headers: {}, pgid: child.pid!, stop: () => stopGroup(child) };
}
