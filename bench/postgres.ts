/**
 * This server on PostgreSQL: the throughput scenarios on one instance addressed directly and on 1, 2
 * and 3 instances behind HAProxy (deploy/haproxy.cfg), with the CPU each part used during each cell;
 * and how fast a tasks/result waiting on one instance wakes when the task completes on another.
 * The database is a fresh one on TEST_DATABASE_URL's server, else on an embedded PostgreSQL.
 */
import { RawMcp, SseReader } from '../tests/helpers/mcp';
import type { TestServer } from '../tests/helpers/server';
import { startClusterPeer, startOursPostgres, type Peer } from './peers';
import { measurePeer, throughputConfig, type ThroughputRow } from './throughput';
import { fmt, fmtInt, markdownTable, runPool, Samples, sleep } from './util';

export const postgresConfig = {
  clusterSizes: [1, 2, 3],
  wakeSamples: 200,
  /** Under load: tasks 20 at a time, so about 20 complete and wake together. */
  wake: { concurrency: 20, delaySeconds: 0.2 },
  /** The wake-up path alone, on the largest cluster: one task at a time, as the SQLite figure below. */
  wakeAlone: { concurrency: 1, delaySeconds: 0.05 },
};

interface WakeShape {
  concurrency: number;
  delaySeconds: number;
}

export interface PostgresResults {
  rows: ThroughputRow[];
  wake: Array<{ name: string; samples: Samples }>;
  /** Where PostgreSQL ran, for the output. */
  database: string;
}

export async function measurePostgres(log: (line: string) => void): Promise<PostgresResults> {
  const rows: ThroughputRow[] = [];
  const wake: PostgresResults['wake'] = [];
  const starters: Array<() => Promise<Peer>> = [startOursPostgres, ...postgresConfig.clusterSizes.map((n) => () => startClusterPeer(n))];
  for (const start of starters) {
    const peer = await start();
    try {
      rows.push(...(await measurePeer(peer, false, log)));
      const cluster = 'cluster' in peer ? (peer as Awaited<ReturnType<typeof startClusterPeer>>) : undefined;
      if (cluster && cluster.cluster.instances.length >= 2) {
        const [a, b] = cluster.cluster.instances;
        const n = cluster.cluster.instances.length;
        const shapes = n === Math.max(...postgresConfig.clusterSizes) ? [postgresConfig.wake, postgresConfig.wakeAlone] : [postgresConfig.wake];
        for (const shape of shapes) {
          for (const [where, waitOn] of [['A', a], ['B', b]] as const) {
            const name = `${n} instances: task on A, tasks/result on ${where}; delay ${shape.delaySeconds} s, ${shape.concurrency === 1 ? 'one at a time' : `${shape.concurrency} at a time`}`;
            wake.push({ name, samples: await wakeUps(a, waitOn, cluster.token, shape) });
            log(`wake-ups measured: ${name}`);
          }
        }
      }
    } finally {
      await peer.stop();
    }
  }
  return { rows, wake, database: process.env.TEST_DATABASE_URL ? 'the PostgreSQL server TEST_DATABASE_URL names' : 'an embedded PostgreSQL started for the run' };
}

/**
 * `delay` tasks created on instance A (its own URL, not through the proxy), each followed at once by
 * tasks/result for it on instance `waitOn` with the same session; `shape.concurrency` at a time, one
 * session per worker.
 * The figure per task: the time the reply was read by the client minus the task's lastUpdatedAt (read
 * afterwards with tasks/get), the time A stamped on the completing transaction before committing it.
 * So it spans A's commit, the notification reaching the waiting instance, that instance reading the
 * task and writing the reply, and HTTP; both clocks are this machine's. A tasks/result that does not
 * wait (the task had already ended) is an error, not a sample.
 */
async function wakeUps(a: TestServer, waitOn: TestServer, token: string, shape: WakeShape): Promise<Samples> {
  const sessions = await Promise.all(
    Array.from({ length: shape.concurrency }, async () => {
      const onA = new RawMcp(a.mcpUrl, token);
      await onA.initialize();
      const onWaiter = new RawMcp(waitOn.mcpUrl, token);
      onWaiter.sessionId = onA.sessionId;
      return { onA, onWaiter };
    }),
  );
  const samples = new Samples();
  const run = await runPool(postgresConfig.wakeSamples, shape.concurrency, async (_index, worker) => {
    const { onA, onWaiter } = sessions[worker];
    const { taskId } = await onA.startDelayTask(shape.delaySeconds);
    const response = await onWaiter.post({ jsonrpc: '2.0', id: 1, method: 'tasks/result', params: { taskId } });
    if (!response.headers.get('content-type')?.startsWith('text/event-stream')) {
      await response.body?.cancel();
      throw new Error(`tasks/result did not wait (status ${response.status}): the task had ended`);
    }
    const reader = new SseReader(response);
    const reply = await reader.nextMessageWhere((message) => message.id === 1 && ('result' in message || 'error' in message), 10_000);
    const receivedAt = Date.now();
    await reader.close();
    if (!('result' in reply)) throw new Error(`no result: ${JSON.stringify(reply).slice(0, 200)}`);
    const task = await onA.call('tasks/get', { taskId });
    if (task.status !== 'completed') throw new Error(`task ${task.status} after its result`);
    samples.add(receivedAt - Date.parse(task.lastUpdatedAt));
  });
  samples.errors = run.errors;
  samples.firstError = run.firstError;
  samples.wallMs = run.wallMs;
  await sleep(500);
  return samples;
}

const cpuCell = (seconds: number | undefined, requests: number) =>
  seconds === undefined ? '–' : `${fmt(seconds, 1)} s (${fmt((seconds * 1000) / requests, 2)})`;

/**
 * The PostgreSQL tables: requests per second beside SQLite's (the production server, from the same run
 * when it measured it), the CPU each part used, and the wake-ups.
 */
export function postgresTables(results: PostgresResults, sqliteRows: ThroughputRow[], cores: number): string {
  const sqlite = sqliteRows.filter((row) => row.server.includes('production'));
  const servers = [...new Set(results.rows.map((row) => row.server))];
  const scenarios = [...new Set(results.rows.map((row) => row.scenario))];
  const cell = (rows: ThroughputRow[], server: string | undefined, scenario: string) => rows.find((row) => (server === undefined || row.server === server) && row.scenario === scenario);
  const single = servers.find((name) => name.includes('1 instance behind'));
  const largest = servers.at(-1)!;
  const rate = (row: ThroughputRow | undefined) => (row ? `${fmtInt(row.requestsPerSecond)} (p50 ${row.p50}, p99 ${row.p99} ms${row.errors ? `, ${row.errors} errors` : ''})` : '–');
  const throughput = scenarios.map((scenario) => {
    const behind1 = cell(results.rows, single, scenario);
    const behindN = cell(results.rows, largest, scenario);
    return [
      scenario,
      rate(cell(sqlite, undefined, scenario)),
      ...servers.map((server) => rate(cell(results.rows, server, scenario))),
      behind1 && behindN ? `${fmt(behindN.requestsPerSecond / behind1.requestsPerSecond, 2)}×` : '–',
    ];
  });
  const cpuRows = [...sqlite.map((row) => ({ ...row, server: 'SQLite, 1 instance, direct' })), ...results.rows].map((row) => {
    const total = row.cpu.node + (row.cpu.haproxy ?? 0) + (row.cpu.postgres ?? 0) + row.cpu.client;
    return [
      row.server,
      row.scenario,
      fmtInt(row.requestsPerSecond),
      cpuCell(row.cpu.node, row.requests),
      cpuCell(row.cpu.haproxy, row.requests),
      cpuCell(row.cpu.postgres, row.requests),
      cpuCell(row.cpu.client, row.requests),
      `${fmt((total / (row.wallS * cores)) * 100, 0)} %`,
    ];
  });
  const wakeRows = results.wake.map(({ name, samples }) => [
    name,
    fmtInt(samples.values.length),
    fmt(samples.percentile(50), 0),
    fmt(samples.percentile(95), 0),
    fmt(samples.percentile(99), 0),
    fmt(Math.max(...samples.values), 0),
    `${samples.errors}${samples.firstError ? ` (${samples.firstError.slice(0, 120)})` : ''}`,
  ]);
  return [
    `PostgreSQL: ${results.database}; each setup on a fresh database. Behind HAProxy: deploy/haproxy.cfg (round robin per request), the instances started as tests/helpers/cluster.ts does (APP_URL the proxy's, TRUST_PROXY, one AUTH_SECRET). Every instance: pool of 10 connections, limits off as above.`,
    '',
    markdownTable(['request', 'SQLite, 1 instance, direct', ...servers, `${largest.match(/\d+ instances?/)?.[0] ?? 'largest'} ÷ 1 behind HAProxy`], throughput),
    '',
    `### Where the CPU goes (PostgreSQL rows; SQLite for comparison)`,
    '',
    `CPU seconds used during each ${throughputConfig.seconds} s cell, and in brackets CPU ms per request: the instances' Node processes (each instance's process group, /proc/<pid>/stat utime + stime), HAProxy (its process, all threads), PostgreSQL (every process named \`postgres\` on the machine, plus the reaped children of each postmaster: any other use of PostgreSQL on the machine meanwhile would count too) and the load generator (${throughputConfig.loadGenerator === 'wrk' ? 'its process' : 'this process, autocannon: process.cpuUsage'}). The last column is the sum over the wall time of the ${cores} cores.`,
    '',
    markdownTable(['setup', 'request', 'req/s', 'Node instances', 'HAProxy', 'PostgreSQL', 'load generator', 'all of the machine'], cpuRows),
    '',
    `### tasks/result wake-up across instances (${postgresConfig.wakeSamples} \`delay\` tasks per row)`,
    '',
    `Each task is created on instance A (its own URL, not through the proxy); tasks/result follows at once on A itself or on instance B, in the same session. Figure: the time the client read the reply minus the task's lastUpdatedAt (tasks/get afterwards), which A stamps on the completing transaction before its COMMIT; so it spans the commit, NOTIFY reaching the waiting instance, that instance reading the task and replying, and HTTP. Whole milliseconds (both times are Date.now()).`,
    '',
    markdownTable(['measurement', 'n', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'errors'], wakeRows),
  ].join('\n');
}
