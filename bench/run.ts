/**
 * `npm run bench`: the figures in BENCHMARKS.md. Reporting only: nothing here asserts on a timing.
 *
 * 1. Throughput side by side (bench/throughput.ts): this server through the production server and
 *    through Next's route handler, the official reference server and a bare node:http reply.
 * 2. This server on PostgreSQL (bench/postgres.ts): the same throughput scenarios on one instance
 *    addressed directly and on 1, 2 and 3 instances behind HAProxy, with the CPU the instances, HAProxy
 *    and PostgreSQL used; tasks/result waking on one instance when the task completes on another.
 *    PostgreSQL is TEST_DATABASE_URL's server when set, else an embedded one, as in the tests.
 * 3. The targets that need this server alone: how fast tasks/result wakes, tasks/list for a user with
 *    a million tasks, ten thousand working tasks with ten thousand blocked waiters, idle memory.
 * 4. Being told (bench/notify.ts): from a question to its webhook and its push, and what a listening
 *    webhook costs the tasks of its person.
 * 5. Storage in trouble (bench/storage.ts): reads while another process holds SQLite's write lock and
 *    writes wait for it, and what their waiting costs.
 * 6. The servers people already run (bench/gateway.ts): server-everything's `echo` called directly and
 *    through this server's MCP_SERVERS_FILE (a durable task per call), over stdio and Streamable HTTP:
 *    latency one call at a time, throughput with eight callers, and what this server adds.
 * Servers run on loopback with temporary databases that are removed at the end. BENCH_ONLY=throughput,
 * postgres, alone, heavy, notify, storage or gateway runs one part (postgres alone has no SQLite figures
 * beside its own).
 */
import Database from '@/db/sqlite';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { RawMcp, readRpcReply, SseReader } from '../tests/helpers/mcp';
import { createToken, type TestServer } from '../tests/helpers/server';
import { startOurs } from './peers';
import { measureNotifications } from './notify';
import { measureStorage } from './storage';
import { measureGateway } from './gateway';
import { measurePostgres, postgresTables } from './postgres';
import { measureCommitSettings, measureThroughput, throughputConfig, type ThroughputRow } from './throughput';
import { fmt, fmtInt, groupCpuSeconds, groupRssKib, markdownTable, mib, runPool, Samples, sleep } from './util';

const config = {
  wakeSamples: 200,
  wakeDelaySeconds: 0.05,
  listTasks: 1_000_000,
  listSamples: 300,
  heavyTasks: Number(process.env.BENCH_HEAVY_TASKS ?? 10_000),
  /** Long enough that every waiter is open while its task still works (creating and opening take tens of seconds). */
  heavySeconds: Number(process.env.BENCH_HEAVY_SECONDS ?? 120),
  waitersArrivingAtOnce: 256,
  watchdogMs: 45 * 60 * 1000,
  /** One part alone (`throughput`, `postgres`, `alone`, `heavy`, `notify`, `storage` or `gateway`), for measuring a change; all parts when unset. */
  only: process.env.BENCH_ONLY,
};

const startedAt = performance.now();
const log = (message: string) => process.stderr.write(`[${((performance.now() - startedAt) / 1000).toFixed(1).padStart(6)}s] ${message}\n`);
const output: string[] = [];

/** A ratio in each round the two rows were measured in (both measured in rounds), else of the two rows. */
function roundRatios(mine: ThroughputRow, theirs: ThroughputRow): number[] {
  if (mine.rounds && theirs.rounds && mine.rounds.length === theirs.rounds.length) return mine.rounds.map((value, index) => value / theirs.rounds![index]);
  return [mine.requestsPerSecond / theirs.requestsPerSecond];
}

/** The median of per-round figures, with their range when there are several. */
function spread(values: number[], format: (value: number) => string): string {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = format(median(sorted));
  return sorted.length < 2 ? middle : `${middle} (${format(sorted[0])}–${format(sorted.at(-1)!)})`;
}

function throughputTable(rows: ThroughputRow[]): string {
  const servers = [...new Set(rows.map((row) => row.server))];
  const bareServer = servers.find((name) => name.startsWith('bare'))!;
  const reference = servers.find((name) => name.startsWith('reference'))!;
  const ours = servers.find((name) => name.includes('production'))!;
  const scenarios = [...new Set(rows.filter((row) => row.server === ours).map((row) => row.scenario))];
  const cell = (server: string, scenario: string) => rows.find((row) => row.server === server && row.scenario === scenario);
  const ms = (value: number) => fmt(value, value < 10 ? 1 : 0);
  const cpuPerRequest = (row: ThroughputRow | undefined) => (row ? fmtInt((row.cpu.node / row.requests) * 1e6) : '–');
  // The ceiling is measured beside each scenario (in rounds), or once (the scenario "fixed reply").
  const ceilingOf = (scenario: string) => cell(bareServer, scenario) ?? cell(bareServer, 'fixed reply');
  const bareRows = rows.filter((row) => row.server === bareServer);
  const ceilings = bareRows.flatMap((row) => row.rounds ?? [row.requestsPerSecond]);
  const lines = scenarios.map((scenario) => {
    const mine = cell(ours, scenario)!;
    const theirs = cell(reference, scenario);
    const ceiling = ceilingOf(scenario);
    return [
      scenario,
      ...servers.filter((server) => server !== bareServer).map((server) => {
        const row = cell(server, scenario);
        return row ? `${fmtInt(row.requestsPerSecond)} (p50 ${ms(row.p50)}, p99 ${ms(row.p99)} ms${row.errors ? `, ${row.errors} errors` : ''})` : '–';
      }),
      ceiling ? fmtInt(ceiling.requestsPerSecond) : '–',
      theirs ? spread(roundRatios(mine, theirs), (ratio) => `${fmt(ratio, 1)}×`) : '–',
      ceiling ? spread(roundRatios(mine, ceiling), (ratio) => `${fmt(ratio * 100, 0)} %`) : '–',
      `${cpuPerRequest(mine)} / ${cpuPerRequest(theirs)}`,
    ];
  });
  const rounds = bareRows[0]?.rounds?.length ?? 1;
  return [
    `Ceiling: bare \`node:http\` fixed reply, ${fmtInt(Math.min(...ceilings))} to ${fmtInt(Math.max(...ceilings))} req/s, ` +
      `${fmtInt(median(bareRows.map((row) => (row.cpu.node / row.requests) * 1e6)))} µs of server CPU per request.` +
      (rounds > 1
        ? ` The reference, the ceiling and this server were measured in ${rounds} rounds, scenario by scenario, in that order, all three started and only the measured one driven; each ratio is the median of the rounds' ratios (range in brackets), each figure the median round's.`
        : ''),
    '',
    markdownTable(
      ['request', ...servers.filter((server) => server !== bareServer), 'ceiling beside it', 'ours ÷ reference', 'ours ÷ ceiling', 'server CPU µs per request: ours / reference'],
      lines,
    ),
  ].join('\n');
}

/** Inserts `count` finished tasks for a user, with the columns db/schema.ts defines. */
function seedTasks(server: TestServer, userId: string, count: number): void {
  const db = new Database(server.dbPath);
  const columns = db.prepare(`PRAGMA table_info(tasks)`).all() as Array<{ name: string; notnull: number; dflt_value: unknown }>;
  const now = Date.now();
  const ttlMs = 24 * 60 * 60 * 1000;
  const values = (i: number): Record<string, unknown> => {
    const createdAt = now - 60_000 - i;
    return {
      id: crypto.randomUUID(),
      user_id: userId,
      session_id: null,
      client_name: 'bench-seed',
      client_version: '1.0.0',
      tool_name: 'delay',
      arguments: '{"seconds":0}',
      status: 'completed',
      status_message: 'The task completed.',
      created_at: createdAt,
      last_updated_at: createdAt + 1,
      ttl_ms: ttlMs,
      expires_at: createdAt + ttlMs,
      poll_interval_ms: 1000,
      progress_token: null,
      progress: null,
      progress_total: null,
      progress_message: null,
      result: '{"content":[{"type":"text","text":"Waited 0 s."}]}',
      error: null,
      attempt: 1,
    };
  };
  const known = Object.keys(values(0));
  const missing = columns.filter((column) => column.notnull && column.dflt_value === null && !known.includes(column.name));
  if (missing.length > 0) throw new Error(`tasks has required columns the seeder does not know: ${missing.map((c) => c.name).join(', ')}`);
  const used = known.filter((name) => columns.some((column) => column.name === name));
  const insert = db.prepare(`INSERT INTO tasks (${used.join(', ')}) VALUES (${used.map((name) => `@${name}`).join(', ')})`);
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i += 1) {
      const row = values(i);
      insert.run(Object.fromEntries(used.map((name) => [name, row[name]])));
    }
  });
  for (let from = 0; from < count; from += 50_000) batch(from, Math.min(count, from + 50_000));
  db.close();
}

function latencyRow(name: string, samples: Samples): string[] {
  return [name, fmtInt(samples.values.length), fmt(samples.percentile(50)), fmt(samples.percentile(95)), fmt(samples.percentile(99)), String(samples.errors)];
}

async function thisServerAlone(): Promise<void> {
  const ours = await startOurs({ TASK_MAX_TTL_MS: String(24 * 60 * 60 * 1000) });
  const { server, token, pgid } = ours;
  try {
    if (config.only === 'heavy') {
      await heavyLoad(server, token, pgid);
      return;
    }
    await sleep(2000);
    const idle = groupRssKib(pgid);
    output.push(`Idle RSS after start-up: ${mib(idle.totalKib)} (${idle.processes} process${idle.processes === 1 ? '' : 'es'}).`, '');

    // tasks/result wakes: time from the completing transaction (its last_updated_at) to the reply read.
    const mcp = new RawMcp(server.mcpUrl, token);
    await mcp.initialize();
    const completedAt = server.db().prepare('SELECT last_updated_at AS at FROM tasks WHERE id = ?');
    const wakeSamples = new Samples();
    await runPool(config.wakeSamples, 1, async () => {
      const { taskId } = await mcp.startDelayTask(config.wakeDelaySeconds);
      const response = await mcp.post({ jsonrpc: '2.0', id: 1, method: 'tasks/result', params: { taskId } });
      if (!response.headers.get('content-type')?.startsWith('text/event-stream')) throw new Error('the task had ended before tasks/result waited');
      const reader = new SseReader(response);
      const reply = await reader.nextMessage(10_000);
      const receivedAt = Date.now();
      if (!reply || !('result' in reply)) throw new Error(`no result: ${JSON.stringify(reply)}`);
      const { at } = completedAt.get(taskId) as { at: number };
      wakeSamples.add(receivedAt - at);
    });
    log('tasks/result wake-ups measured');

    const user = server.db().prepare("SELECT id FROM users WHERE email = 'bench@example.com'").get() as { id: string };
    log(`seeding ${fmtInt(config.listTasks)} tasks`);
    seedTasks(server, user.id, config.listTasks);
    log('seeded');
    let cursor: string | undefined;
    const firstPages = await runPool(config.listSamples, 1, async () => void (await mcp.call('tasks/list', {})));
    const walk = await runPool(config.listSamples, 1, async () => {
      const page = await mcp.call('tasks/list', cursor ? { cursor } : {});
      cursor = page.nextCursor;
    });
    output.push(
      `### tasks/result wake-up and tasks/list with ${fmtInt(config.listTasks)} tasks`,
      '',
      markdownTable(['measurement', 'n', 'p50 ms', 'p95 ms', 'p99 ms', 'errors'], [
        latencyRow(`tasks/result reply read after the task completed (delay ${config.wakeDelaySeconds} s)`, wakeSamples),
        latencyRow('tasks/list, first page (50 tasks)', firstPages),
        latencyRow(`tasks/list, ${config.listSamples} consecutive pages through nextCursor`, walk),
      ]),
      '',
    );
    log('tasks/list measured');
    // A user of their own: the one above now has a million stored tasks, which each creation counts (up to the cap).
    await heavyLoad(server, createToken(server, 'bench-heavy@example.com', 'bench'), pgid);
  } finally {
    await ours.stop();
  }
}

/** Ten thousand working tasks, each with a client blocked on tasks/result, until they all end. */
async function heavyLoad(server: TestServer, token: string, pgid: number): Promise<void> {
  const clients = await Promise.all(
    Array.from({ length: throughputConfig.connections }, async () => {
      const client = new RawMcp(server.mcpUrl, token);
      await client.initialize();
      return client;
    }),
  );
  const taskIds: string[] = [];
  log(`creating ${fmtInt(config.heavyTasks)} working tasks`);
  const created = await runPool(config.heavyTasks, clients.length, async (_index, worker) => {
    const { taskId } = await clients[worker].startDelayTask(config.heavySeconds);
    taskIds.push(taskId);
  });
  const cpuBefore = groupCpuSeconds(pgid);
  log(`opening ${fmtInt(taskIds.length)} tasks/result waiters`);
  let answered = 0;
  let answeredAtOnce = 0;
  let failures = 0;
  let firstFailure = '';
  let opened = 0;
  // Clients arrive a few hundred at a time, as they would: ten thousand connections opened in the same
  // instant would measure the kernel's accept queue (SYNs dropped past net.core.somaxconn), not the server.
  const arriving = new Gate(config.waitersArrivingAtOnce);
  const waiters = taskIds.map(async (taskId, index) => {
    const client = clients[index % clients.length];
    try {
      // Each waiter's own id: ids are never reused within a session.
      const id = index + 1;
      const response = await arriving.through(() => client.post({ jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } }));
      opened += 1;
      // A task that has already ended is answered at once as JSON; one still working, on an event stream.
      if (!response.headers.get('content-type')?.startsWith('text/event-stream')) answeredAtOnce += 1;
      const reply = await readRpcReply(response, id, config.heavySeconds * 1000 + 120_000);
      if (reply && 'result' in reply) answered += 1;
      else throw new Error(`no result: ${JSON.stringify(reply).slice(0, 200)}`);
    } catch (error) {
      failures += 1;
      firstFailure ||= String(error);
    }
  });
  // Sampled by phase: while clients arrive, while every one of them waits, and while the tasks end (a
  // waiter answered at once, its task ended before it came, ends nothing).
  const rss = { arriving: [] as number[], waiting: [] as number[], ending: [] as number[] };
  const sampler = setInterval(() => {
    const phase = opened + failures < taskIds.length ? 'arriving' : answered - answeredAtOnce + failures > 0 ? 'ending' : 'waiting';
    rss[phase].push(groupRssKib(pgid).totalKib);
  }, 500);
  const waitersOpenAt = performance.now();
  while (opened + failures < taskIds.length && performance.now() - waitersOpenAt < 120_000) await sleep(200);
  log(`${fmtInt(opened)} waiters open`);
  await Promise.all(waiters);
  clearInterval(sampler);
  const cpu = groupCpuSeconds(pgid) - cpuBefore;
  const wallS = (performance.now() - waitersOpenAt) / 1000;
  output.push(
    `### ${fmtInt(config.heavyTasks)} working tasks (delay ${config.heavySeconds} s), each with a client blocked on tasks/result (clients arriving ${config.waitersArrivingAtOnce} at a time)`,
    '',
    markdownTable(['measurement', 'value'], [
      ['tasks created (16 clients)', `${fmtInt(created.values.length)} in ${fmt(created.wallMs / 1000, 1)} s, ${created.errors} errors${created.firstError ? ` (${created.firstError})` : ''}`],
      ['waiters answered with the result', `${fmtInt(answered)} of ${fmtInt(taskIds.length)}, ${failures} failed${firstFailure ? ` (${firstFailure.slice(0, 160)})` : ''}`],
      ['of which answered at once (their task had ended before they came)', fmtInt(answeredAtOnce)],
      ['server RSS over the whole run: median / max', rssFigure([...rss.arriving, ...rss.waiting, ...rss.ending])],
      ['server RSS while the waiters arrive: median / max', rssFigure(rss.arriving)],
      [`server RSS while all ${fmtInt(taskIds.length)} wait: median / max`, rssFigure(rss.waiting)],
      ['server RSS while the tasks end and their waiters are answered: median / max', rssFigure(rss.ending)],
      ['server CPU while they work and end', `${fmt((cpu / wallS) * 100, 0)} % of one core over ${fmt(wallS, 0)} s`],
    ]),
    '',
  );
}

const rssFigure = (samples: number[]) => (samples.length > 0 ? `${mib(median(samples))} / ${mib(Math.max(...samples))}` : 'no sample');

/** Lets at most `size` calls run at once; the others wait their turn. */
class Gate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  async through<T>(call: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running += 1;
    try {
      return await call();
    } finally {
      this.running -= 1;
      this.waiting.shift()?.();
    }
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function main(): Promise<void> {
  const watchdog = setTimeout(() => {
    log('watchdog: the run took too long; stopping');
    process.exit(2);
  }, config.watchdogMs);
  if (config.only && !['throughput', 'postgres', 'alone', 'heavy', 'notify', 'storage', 'gateway'].includes(config.only)) {
    throw new Error(`BENCH_ONLY=${config.only}: expected throughput, postgres, alone, heavy, notify, storage or gateway`);
  }
  const load = os.loadavg();
  let rows: ThroughputRow[] = [];
  if (!config.only || config.only === 'throughput') {
    rows = await measureThroughput(log);
    output.push(`## Throughput (${throughputConfig.connections} connections, ${throughputConfig.seconds} s per cell after ${throughputConfig.warmUpSeconds} s of warm-up, ${throughputConfig.loadGenerator})`, '', throughputTable(rows), '');
    const settings = await measureCommitSettings(log);
    output.push(
      '### Creating a task under each commit setting (SQLite, npm start)',
      '',
      markdownTable(
        ['setting', 'req/s', 'p50 / p99 ms', 'server CPU ms per creation'],
        settings.map(({ setting, row }) => [setting, fmtInt(row.requestsPerSecond), `${row.p50} / ${row.p99}`, fmt((row.cpu.node / row.requests) * 1000, 2)]),
      ),
      '',
    );
  }
  if (!config.only || config.only === 'postgres') {
    const results = await measurePostgres(log);
    output.push(
      `## PostgreSQL: one instance, and 1 to 3 instances behind HAProxy (${throughputConfig.connections} connections, ${throughputConfig.seconds} s per cell after ${throughputConfig.warmUpSeconds} s of warm-up, ${throughputConfig.loadGenerator})`,
      '',
      postgresTables(results, rows, os.cpus().length),
      '',
    );
  }
  if (!config.only || config.only === 'alone' || config.only === 'heavy') {
    output.push('## This server alone', '');
    await thisServerAlone();
  }
  if (!config.only || config.only === 'notify') {
    output.push('## Being told (webhooks and browser push, on loopback)', '', await measureNotifications(log), '');
  }
  if (!config.only || config.only === 'storage') {
    output.push('## Storage in trouble (SQLite)', '', await measureStorage(log), '');
  }
  if (!config.only || config.only === 'gateway') {
    output.push('## The servers people already run (server-everything directly and through this server)', '', await measureGateway(log), '');
  }
  clearTimeout(watchdog);
  output.push(`Machine: ${os.cpus().length} cores, ${fmt(os.totalmem() / 2 ** 30, 0)} GiB, Node ${process.version}; load average at start ${load.map((value) => fmt(value, 1)).join(' / ')}.`);
  console.log(output.join('\n'));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
