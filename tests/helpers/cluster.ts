import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from './postgres';
import { freePort, startServer, type TestServer } from './server';

const root = path.resolve(__dirname, '..', '..');
export const haproxyPath = '/usr/sbin/haproxy';

export interface Cluster {
  /** The load balancer's URL: what a client uses. */
  url: string;
  mcpUrl: string;
  instances: TestServer[];
  database: TestDatabase;
  /** How many MCP requests each instance has logged so far. */
  requestCounts(): number[];
  /** What HAProxy has printed: an instance it took out of rotation, and why. */
  proxyLog(): string;
  stop(): Promise<void>;
}

/**
 * Several instances of the built server on one fresh PostgreSQL database, behind HAProxy configured by
 * deploy/haproxy.cfg (the README's example, as written): round robin per request, no stickiness.
 * Returned once HAProxy has checked every instance and has each in rotation.
 */
export async function startCluster(options: { instances?: number; env?: Record<string, string> } = {}): Promise<Cluster> {
  if (!fs.existsSync(haproxyPath)) throw new Error(`The multi-instance tests need HAProxy at ${haproxyPath}: apt-get install -y haproxy (npm test installs it as root).`);
  const count = options.instances ?? 3;
  const database = await createTestDatabase();
  const proxyPort = await freePort();
  const url = `http://localhost:${proxyPort}`;
  const env = {
    DATABASE_URL: database.url,
    DATABASE_POOL_SIZE: '4',
    APP_URL: url,
    NEXTAUTH_URL: url,
    AUTH_SECRET: randomBytes(32).toString('hex'),
    TRUST_PROXY: 'true',
    ...options.env,
  };
  const instances: TestServer[] = [];
  let proxy: ChildProcess | undefined;
  let log = '';
  // deploy/haproxy.cfg names three instances; a smaller cluster (the bench's) runs a copy of it without
  // the server lines it has no instance for, since HAProxy refuses a server without an address.
  const shippedConfig = path.join(root, 'deploy', 'haproxy.cfg');
  const config = count >= 3 ? shippedConfig : path.join(os.tmpdir(), `mcp-haproxy-${randomBytes(8).toString('hex')}.cfg`);
  if (config !== shippedConfig) {
    const lines = fs.readFileSync(shippedConfig, 'utf8').split('\n');
    fs.writeFileSync(config, lines.filter((line) => Number(/^\s*server instance(\d+)\s/.exec(line)?.[1] ?? 0) <= count).join('\n'));
  }
  // A stats socket, from a second file beside the shipped one: how the harness learns that HAProxy has
  // checked every instance (it counts a server up before its first check, and down at its first failure).
  const statsName = path.join(os.tmpdir(), `mcp-haproxy-${randomBytes(8).toString('hex')}`);
  fs.writeFileSync(`${statsName}.cfg`, `global\n    stats socket ${statsName}.sock mode 600 level user\n`);
  const stop = async () => {
    if (proxy && proxy.exitCode === null) {
      const exited = new Promise((resolve) => proxy!.once('exit', resolve));
      proxy.kill('SIGKILL');
      await exited;
    }
    await Promise.all(instances.map((instance) => instance.stop()));
    await database.drop();
    if (config !== shippedConfig) fs.rmSync(config, { force: true });
    for (const file of [`${statsName}.cfg`, `${statsName}.sock`]) fs.rmSync(file, { force: true });
  };
  try {
    // Started together: they migrate one at a time under the advisory lock.
    instances.push(...(await Promise.all(Array.from({ length: count }, () => startServer(env)))));
    const backends = Object.fromEntries(instances.map((instance, index) => [`MCP_INSTANCE_${index + 1}`, new URL(instance.url).host.replace('localhost', '127.0.0.1')]));
    proxy = spawn(haproxyPath, ['-db', '-f', config, '-f', `${statsName}.cfg`], {
      env: { ...process.env, MCP_PROXY_BIND: `127.0.0.1:${proxyPort}`, ...backends },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proxy.stdout!.on('data', (chunk) => (log += chunk));
    proxy.stderr!.on('data', (chunk) => (log += chunk));
    // Listening, with every instance in rotation and a health check passed by each, before a test counts
    // on round robin (the stats socket answers once HAProxy has bound its ports).
    for (let tries = 0; ; tries += 1) {
      if (proxy.exitCode !== null) throw new Error(`HAProxy exited:\n${log}`);
      const servers = await serverStates(`${statsName}.sock`).catch(() => []);
      if (servers.length === count && servers.every((server) => server.status === 'UP' && server.check === 'L7OK')) break;
      if (tries > 300) throw new Error(`HAProxy did not put every instance in rotation: ${JSON.stringify(servers)}\n${log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    mcpUrl: `${url}/mcp`,
    instances,
    database,
    proxyLog: () => log,
    requestCounts: () => instances.map((instance) => instance.output().split('"msg":"mcp request"').length - 1),
    stop,
  };
}

/** Each server of HAProxy's backend as its stats socket reports it: its status and its last check's. */
async function serverStates(socket: string): Promise<{ name: string; status: string; check: string }[]> {
  const csv = await new Promise<string>((resolve, reject) => {
    let text = '';
    const connection = net.createConnection(socket, () => connection.end('show stat\n'));
    connection.setEncoding('utf8');
    connection.on('data', (chunk: string) => (text += chunk));
    connection.on('end', () => resolve(text));
    connection.on('error', reject);
  });
  const [header, ...rows] = csv.trim().split('\n');
  const columns = header.replace(/^# /, '').split(',');
  const field = (row: string[], name: string) => row[columns.indexOf(name)];
  return rows
    .map((row) => row.split(','))
    .filter((row) => field(row, 'pxname') === 'instances' && !['FRONTEND', 'BACKEND'].includes(field(row, 'svname')))
    .map((row) => ({ name: field(row, 'svname'), status: field(row, 'status'), check: field(row, 'check_status') }));
}
