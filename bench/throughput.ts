/**
 * Requests per second on /mcp, side by side in one run: each server is started fresh, driven by a load
 * generator with 16 connections for a fixed time (one JSON-RPC request per POST, as clients send them),
 * and stopped before the next one starts, so no two servers share the cores.
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startBareNode, startOurs, startReference, startRouteHandler, type CpuReading, type Peer } from './peers';
import { clockTicksPerSecond, groupCpuSeconds, sleep } from './util';

const wrkPath = '/usr/bin/wrk';

export const throughputConfig = {
  connections: 16,
  /**
   * wrk (Debian's package: apt-get install wrk) when it is there, else autocannon (pinned, in-process). wrk
   * is written in C and runs in a process of its own with one thread: it needs a fraction of the CPU
   * autocannon does, which on two cores is CPU taken from the server. BENCH_LOAD chooses.
   */
  loadGenerator: (process.env.BENCH_LOAD ?? (fs.existsSync(wrkPath) ? 'wrk' : 'autocannon')) as 'wrk' | 'autocannon',
  seconds: Number(process.env.BENCH_SECONDS ?? 8),
  /** The same load, unmeasured, before each cell: every server is measured warm (its JIT, caches, pools). */
  warmUpSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 2),
  /**
   * Rounds of the reference, the ceiling and this server measured one after another, scenario by
   * scenario: this machine's speed moves by a fifth or more from one minute to the next, so a ratio is
   * taken within each round, from cells measured seconds apart, and the median round reported with the range.
   */
  rounds: Number(process.env.BENCH_ROUNDS ?? 3),
};

/** tasks/get measured again once the dashboard has served a page in the same process. */
export const afterDashboardScenario = 'tasks/get, after a dashboard page';

export interface ThroughputRow {
  server: string;
  scenario: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  /** Replies received, and the wall-clock seconds autocannon ran for. */
  requests: number;
  wallS: number;
  /** CPU seconds used during the cell, by part; `client` is the load generator (wrk's process, or autocannon in this one). */
  cpu: CpuReading & { client: number };
  /** Measured in rounds (`throughputConfig.rounds`): requests per second in each; the row is the median round's. */
  rounds?: number[];
}

const protocolVersion = '2025-11-25';

async function rpc(peer: Peer, headers: Record<string, string>, body: unknown): Promise<{ headers: Headers; body: any }> {
  const response = await fetch(peer.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...peer.headers, ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const data = text.startsWith('{') ? text : text.split('\n').filter((line) => line.startsWith('data: {')).at(-1)?.slice(6);
  return { headers: response.headers, body: data ? JSON.parse(data) : undefined };
}

async function openSession(peer: Peer): Promise<Record<string, string>> {
  const init = await rpc(peer, {}, {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } },
  });
  const sessionId = init.headers.get('mcp-session-id');
  if (!sessionId) throw new Error(`${peer.name}: initialize gave no session: ${JSON.stringify(init.body)}`);
  const headers = { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': protocolVersion };
  await rpc(peer, headers, { jsonrpc: '2.0', method: 'notifications/initialized' });
  return headers;
}

/** Each scenario's request body, checked once to succeed before it is measured. */
async function scenarios(peer: Peer, session: Record<string, string>, reference: boolean): Promise<Array<[string, unknown]>> {
  const createCall = reference
    ? { name: 'simulate-research-query', arguments: { topic: 'bench' }, task: { ttl: 600_000 } }
    : { name: 'delay', arguments: { seconds: 0 }, task: { ttl: 600_000 } };
  const created = await rpc(peer, session, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: createCall });
  const taskId = created.body?.result?.task?.taskId;
  if (!taskId) throw new Error(`${peer.name}: creating a task failed: ${JSON.stringify(created.body)}`);
  const list: Array<[string, unknown]> = [
    ['tasks/get', { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId } }],
    ['create a task', { jsonrpc: '2.0', id: 3, method: 'tools/call', params: createCall }],
    ['tools/list', { jsonrpc: '2.0', id: 4, method: 'tools/list' }],
    ['ping', { jsonrpc: '2.0', id: 5, method: 'ping' }],
  ];
  for (const [name, body] of list) {
    const reply = await rpc(peer, session, body);
    if (!reply.body || reply.body.error) throw new Error(`${peer.name} ${name}: ${JSON.stringify(reply.body)}`);
  }
  return list;
}

const modernVersion = '2026-07-28';

/**
 * The same work asked by a 2026-07-28 client (this server only): no session, every request with its
 * `_meta` and mirrored headers, the task created through the tasks extension.
 */
async function modernScenarios(peer: Peer): Promise<Array<[string, Record<string, string>, unknown]>> {
  const request = (id: number, method: string, params: Record<string, unknown>, name?: string): [Record<string, string>, unknown] => [
    { 'MCP-Protocol-Version': modernVersion, 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}) },
    {
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': modernVersion,
          'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        },
      },
    },
  ];
  const create = request(1, 'tools/call', { name: 'delay', arguments: { seconds: 0 } }, 'delay');
  const created = await rpc(peer, create[0], create[1]);
  const taskId = created.body?.result?.taskId;
  if (!taskId) throw new Error(`${peer.name}: creating a ${modernVersion} task failed: ${JSON.stringify(created.body)}`);
  const list: Array<[string, Record<string, string>, unknown]> = [
    [`tasks/get (${modernVersion})`, ...request(2, 'tasks/get', { taskId }, taskId)],
    [`create a task (${modernVersion})`, ...create],
    [`tools/list (${modernVersion})`, ...request(4, 'tools/list', {})],
  ];
  for (const [name, headers, body] of list) {
    const reply = await rpc(peer, headers, body);
    if (!reply.body || reply.body.error) throw new Error(`${peer.name} ${name}: ${JSON.stringify(reply.body)}`);
  }
  return list;
}

/** What one run of the load generator measured. */
interface Driven {
  requestsPerSecond: number;
  /** Latency percentiles, in milliseconds. */
  p50: number;
  p99: number;
  /** Failed requests: connection errors, timeouts and replies other than 2xx. */
  errors: number;
  requests: number;
}

function drive(url: string, headers: Record<string, string>, body: unknown, seconds = throughputConfig.seconds): Promise<Driven> {
  const allHeaders = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers };
  return throughputConfig.loadGenerator === 'wrk' ? driveWrk(url, allHeaders, JSON.stringify(body), seconds) : driveAutocannon(url, allHeaders, JSON.stringify(body), seconds);
}

async function driveAutocannon(url: string, headers: Record<string, string>, body: string, seconds: number): Promise<Driven> {
  const result = await autocannon({ url, method: 'POST', connections: throughputConfig.connections, duration: seconds, headers, body });
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    requests: result.requests.total,
  };
}

/** A Lua long string (`[=[…]=]`): the body and headers go to wrk as they are, with nothing to escape. */
const luaString = (text: string) => {
  let level = '=';
  while (text.includes(`]${level}]`)) level += '=';
  return `[${level}[${text}]${level}]`;
};

/** wrk's latency figure ("812.00us", "2.17ms", "1.02s") in milliseconds. */
function wrkMs(figure: string | undefined): number {
  const match = /^([\d.]+)(us|ms|s)$/.exec(figure ?? '');
  if (!match) return Number.NaN;
  return Number(match[1]) * { us: 0.001, ms: 1, s: 1000 }[match[2] as 'us' | 'ms' | 's'];
}

async function driveWrk(url: string, headers: Record<string, string>, body: string, seconds: number): Promise<Driven> {
  const script = path.join(os.tmpdir(), `mcp-bench-wrk-${process.pid}.lua`);
  const lines = ['wrk.method = "POST"', `wrk.body = ${luaString(body)}`, ...Object.entries(headers).map(([name, value]) => `wrk.headers[ ${luaString(name)} ] = ${luaString(value)}`)];
  fs.writeFileSync(script, `${lines.join('\n')}\n`);
  // One thread: wrk drives 16 connections from one core with room to spare, and leaves the other to the server.
  const child = spawn(wrkPath, ['-t1', `-c${throughputConfig.connections}`, `-d${seconds}s`, '--latency', '-s', script, url], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  fs.rmSync(script, { force: true });
  const number = (pattern: RegExp) => Number(pattern.exec(output)?.[1] ?? Number.NaN);
  const requests = number(/(\d+) requests in/);
  if (code !== 0 || !Number.isFinite(requests)) throw new Error(`wrk failed (${code}): ${output.slice(0, 500)}`);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  return {
    requestsPerSecond: number(/Requests\/sec:\s+([\d.]+)/),
    p50: wrkMs(/^\s+50%\s+(\S+)/m.exec(output)?.[1]),
    p99: wrkMs(/^\s+99%\s+(\S+)/m.exec(output)?.[1]),
    errors: (socketErrors ? socketErrors.slice(1).reduce((sum, count) => sum + Number(count), 0) : 0) + (number(/Non-2xx or 3xx responses: (\d+)/) || 0),
    requests,
  };
}

/** CPU seconds this process's ended and waited-for children used so far (wrk, once it has exited). */
function childrenCpuSeconds(): number {
  const fields = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  // cutime and cstime: fields 16 and 17 of /proc/<pid>/stat, 14 and 15 after the command name.
  return (Number(fields[13]) + Number(fields[14])) / clockTicksPerSecond;
}

/** How a server's CPU seconds are read: its own reader (PostgreSQL setups), else its process group's. */
const cpuReaderOf = (peer: Peer) => peer.cpu ?? ((): CpuReading => ({ node: groupCpuSeconds(peer.pgid) }));

/** Waits until a server uses under a tenth of a core over half a second (at most `maxMs`). */
async function untilQuiet(readCpu: () => CpuReading, maxMs = 60_000): Promise<void> {
  const total = () => Object.values(readCpu()).reduce<number>((sum, value) => sum + (value ?? 0), 0);
  const deadline = performance.now() + maxMs;
  let last = total();
  do {
    await sleep(500);
    const now = total();
    if (now - last < 0.05) return;
    last = now;
  } while (performance.now() < deadline);
}

/** One cell: a warm-up, then the server's and the load generator's CPU read before and after it runs. */
async function measureCell(peer: Peer, server: string, scenario: string, headers: Record<string, string>, body: unknown): Promise<ThroughputRow> {
  if (throughputConfig.warmUpSeconds > 0) await drive(peer.url, headers, body, throughputConfig.warmUpSeconds);
  const readCpu = cpuReaderOf(peer);
  const before = readCpu();
  const clientBefore = process.cpuUsage();
  const childrenBefore = childrenCpuSeconds();
  const started = performance.now();
  const result = await drive(peer.url, headers, body);
  const wallS = (performance.now() - started) / 1000;
  const after = readCpu();
  const client = process.cpuUsage(clientBefore);
  const clientS = (client.user + client.system) / 1e6 + (childrenCpuSeconds() - childrenBefore);
  const used = (key: keyof CpuReading) => (before[key] === undefined || after[key] === undefined ? undefined : after[key]! - before[key]!);
  // Work a cell leaves behind (created tasks still running or ending, their garbage) must not count in
  // the next one, on this server or on another: the server is left to go quiet first.
  await untilQuiet(readCpu);
  return {
    server,
    scenario,
    ...result,
    wallS,
    cpu: { node: used('node')!, haproxy: used('haproxy'), postgres: used('postgres'), client: clientS },
  };
}

/** Each scenario of a started server as a cell to measure: reads first, creation last. */
async function cellsOf(peer: Peer, reference: boolean): Promise<Array<[string, Record<string, string>, unknown]>> {
  if (peer.name.startsWith('bare')) return [['fixed reply', {}, { jsonrpc: '2.0', id: 1, method: 'ping' }]];
  const session = await openSession(peer);
  const cells: Array<[string, Record<string, string>, unknown]> = (await scenarios(peer, session, reference)).map(([scenario, body]) => [scenario, { ...peer.headers, ...session }, body]);
  if (!reference) for (const [scenario, headers, body] of await modernScenarios(peer)) cells.push([scenario, { ...peer.headers, ...headers }, body]);
  // Reads first: the tasks a creation cell makes leave the server garbage to collect, and work to finish,
  // for seconds after it, which the cells measured then would pay for.
  const creates = (scenario: string) => scenario.startsWith('create');
  return [...cells.filter(([scenario]) => !creates(scenario)), ...cells.filter(([scenario]) => creates(scenario))];
}

/** Runs one started server through every scenario once (`reference`: the reference server's task tool). */
export async function measurePeer(peer: Peer, reference: boolean, log: (line: string) => void): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  for (const [scenario, headers, body] of await cellsOf(peer, reference)) {
    const row = await measureCell(peer, peer.name, scenario, headers, body);
    rows.push(row);
    log(`${peer.name} ${scenario}: ${row.requestsPerSecond.toFixed(0)} req/s, p99 ${row.p99} ms`);
  }
  return rows;
}

/** The row of the median round, with every round's requests per second. */
function medianRound(rounds: ThroughputRow[]): ThroughputRow {
  const sorted = [...rounds].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
  return { ...sorted[Math.floor((sorted.length - 1) / 2)], rounds: rounds.map((row) => row.requestsPerSecond) };
}

/**
 * The reference, the ceiling and this server, all started and idle but the one driven, measured in
 * rounds: in each round every scenario runs on the reference, then the ceiling's fixed reply (recorded
 * under the scenario's name), then this server, so that each ratio compares cells seconds apart.
 */
async function measureInRounds(starters: Array<[() => Promise<Peer>, boolean]>, log: (line: string) => void): Promise<ThroughputRow[]> {
  const peers: Array<{ peer: Peer; cells: Array<[string, Record<string, string>, unknown]> }> = [];
  try {
    for (const [start, reference] of starters) {
      const peer = await start();
      peers.push({ peer, cells: [] });
      peers.at(-1)!.cells = await cellsOf(peer, reference);
    }
    // What a start leaves running (compiling, recovering, building caches) is not measured as load.
    for (const { peer } of peers) await untilQuiet(cpuReaderOf(peer));
    const isCeiling = (peer: Peer) => peer.name.startsWith('bare');
    const scenarioOrder = [...new Set(peers.flatMap(({ peer, cells }) => (isCeiling(peer) ? [] : cells.map(([scenario]) => scenario))))].sort(
      (a, b) => Number(a.startsWith('create')) - Number(b.startsWith('create')),
    );
    const measured = new Map<string, ThroughputRow[]>();
    for (let round = 1; round <= throughputConfig.rounds; round += 1) {
      for (const scenario of scenarioOrder) {
        for (const { peer, cells } of peers) {
          const cell = isCeiling(peer) ? cells[0] : cells.find(([name]) => name === scenario);
          if (!cell) continue;
          const row = await measureCell(peer, peer.name, scenario, cell[1], cell[2]);
          const key = `${peer.name}\u0000${scenario}`;
          measured.set(key, [...(measured.get(key) ?? []), row]);
          log(`round ${round}: ${peer.name} ${isCeiling(peer) ? `(beside ${scenario})` : scenario}: ${row.requestsPerSecond.toFixed(0)} req/s, p99 ${row.p99} ms`);
        }
      }
    }
    return [...measured.values()].map(medianRound);
  } finally {
    for (const { peer } of peers) await peer.stop();
  }
}

/**
 * tasks/get on a fresh server once the dashboard has served a page in its process, as in a deployment
 * whose dashboard is used: /mcp then runs beside what Next.js left (its AsyncLocalStorage, which on
 * Node 20 puts a hook on every promise, and its code in the same JIT).
 */
async function measureAfterDashboardPage(peer: Peer, log: (line: string) => void): Promise<ThroughputRow> {
  const session = await openSession(peer);
  const page = await fetch(new URL('/signin', peer.url));
  if (page.status !== 200) throw new Error(`${peer.name}: the sign-in page answered ${page.status}`);
  const [, tasksGet] = (await scenarios(peer, session, false)).find(([scenario]) => scenario === 'tasks/get')!;
  const row = await measureCell(peer, peer.name, afterDashboardScenario, { ...peer.headers, ...session }, tasksGet);
  log(`${peer.name} ${afterDashboardScenario}: ${row.requestsPerSecond.toFixed(0)} req/s, p99 ${row.p99} ms`);
  return row;
}

/** Runs every server through every scenario; `log` reports progress. */
export async function measureThroughput(log: (line: string) => void): Promise<ThroughputRow[]> {
  const rows = await measureInRounds(
    [
      [startReference, true],
      [startBareNode, false],
      [startOurs, false],
    ],
    log,
  );
  // Next's own server, once: the same handler behind another mount, not a peer to compare with.
  const routeHandler = await startRouteHandler();
  try {
    rows.push(...(await measurePeer(routeHandler, false, log)));
  } finally {
    await routeHandler.stop();
  }
  const afterPage = await startOurs();
  try {
    rows.push(await measureAfterDashboardPage(afterPage, log));
  } finally {
    await afterPage.stop();
  }
  return rows;
}

/**
 * Creating a task on this server (npm start, SQLite) under each commit setting: the group commit on and
 * off, SQLite's `synchronous` normal and full (db/run.ts, README "Group commit").
 */
export async function measureCommitSettings(log: (line: string) => void): Promise<Array<{ setting: string; row: ThroughputRow }>> {
  const settings: Array<[string, Record<string, string>]> = [
    ['group commit on, synchronous normal (the default)', { SQLITE_GROUP_COMMIT: 'true', SQLITE_SYNCHRONOUS: 'normal' }],
    ['group commit off, synchronous normal', { SQLITE_GROUP_COMMIT: 'false', SQLITE_SYNCHRONOUS: 'normal' }],
    ['group commit on, synchronous full', { SQLITE_GROUP_COMMIT: 'true', SQLITE_SYNCHRONOUS: 'full' }],
    ['group commit off, synchronous full', { SQLITE_GROUP_COMMIT: 'false', SQLITE_SYNCHRONOUS: 'full' }],
  ];
  const measured: Array<{ setting: string; row: ThroughputRow }> = [];
  for (const [setting, env] of settings) {
    const peer = await startOurs(env);
    try {
      const session = await openSession(peer);
      const [, body] = (await scenarios(peer, session, false)).find(([scenario]) => scenario === 'create a task')!;
      const row = await measureCell(peer, peer.name, 'create a task', { ...peer.headers, ...session }, body);
      measured.push({ setting, row });
      log(`create a task, ${setting}: ${row.requestsPerSecond.toFixed(0)} req/s, p99 ${row.p99} ms`);
    } finally {
      await peer.stop();
    }
  }
  return measured;
}

