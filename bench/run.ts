/**
 * `npm run bench`: starts the built server on a free loopback port with a temporary database, drives it
 * over raw HTTP (one JSON-RPC message per POST, as any MCP client does) and prints markdown tables.
 * Reporting only: nothing here asserts on a timing. Everything it writes lives in the server's temp dir,
 * which is removed at the end.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { RawMcp } from '../tests/helpers/mcp';
import { createToken, startServer, type TestServer } from '../tests/helpers/server';
import {
  Samples,
  findServerGroup,
  fmt,
  fmtInt,
  groupBreakdown,
  groupCpuSeconds,
  groupRssKib,
  groupWrittenBytes,
  markdownTable,
  mib,
  runPool,
  setServerCpuProbe,
  sleep,
} from './util';

const config = {
  concurrency: 16,
  warmup: 150,
  ping: 500,
  createSequential: 300,
  createConcurrent: 1000,
  getSequential: 1000,
  getConcurrent: 2000,
  e2eSequential: 200,
  e2eConcurrent: 500,
  e2eBusSequential: 100,
  e2eBusSeconds: 0.05,
  listTasks: 5000,
  listSamples: 200,
  deepPage: 90,
  heavyTasks: 20_000,
  heavyDeepPage: 390,
  heavySamples: 100,
  workingTasks: 500,
  workingSeconds: 60,
  settleMs: 5000,
  cpuWindowMs: 5000,
  cancelSequential: 200,
  /** The whole run is abandoned (server stopped) after this long. */
  watchdogMs: 6 * 60 * 1000,
};

interface Row {
  benchmark: string;
  samples: Samples;
  concurrency: number;
  unit: string;
}

const rows: Row[] = [];
const memory: Array<[string, string]> = [];
const notes: string[] = [];
const startedAt = performance.now();
const loadAtStart = os.loadavg();

const log = (message: string) => {
  const seconds = ((performance.now() - startedAt) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[${seconds}s] ${message}\n`);
};

function record(benchmark: string, samples: Samples, concurrency: number, unit = 'req/s'): void {
  rows.push({ benchmark, samples, concurrency, unit });
  log(
    `${benchmark}: p50 ${fmt(samples.percentile(50))} ms, p95 ${fmt(samples.percentile(95))} ms, ` +
      `${fmt(samples.throughput(), 0)} ${unit}, ${samples.errors} errors`,
  );
  if (samples.firstError) log(`  first error: ${samples.firstError}`);
}

async function startDelay(client: RawMcp, seconds: number): Promise<string> {
  const result = await client.call('tools/call', { name: 'delay', arguments: { seconds }, task: {} });
  const taskId = result?.task?.taskId;
  if (typeof taskId !== 'string' || result.task.status !== 'working') {
    throw new Error(`unexpected CreateTaskResult: ${JSON.stringify(result)}`);
  }
  return taskId;
}

/** Creates a task and waits for its result; says whether tasks/result had to wait (SSE) or not (JSON). */
async function roundTrip(client: RawMcp, seconds: number): Promise<'waited' | 'immediate'> {
  const taskId = await startDelay(client, seconds);
  const reply = await client.request('tasks/result', { taskId });
  if (reply.body?.error || !Array.isArray(reply.body?.result?.content)) {
    throw new Error(`tasks/result: ${JSON.stringify(reply.body)}`);
  }
  return (reply.headers.get('content-type') ?? '').startsWith('text/event-stream') ? 'waited' : 'immediate';
}

async function sequential(total: number, op: (index: number) => Promise<void>): Promise<Samples> {
  return runPool(total, 1, (index) => op(index));
}

/** Inserts `count` finished tasks for a user in one transaction, with the columns db/schema.ts defines. */
function seedTasks(server: TestServer, userId: string, count: number): void {
  const db = server.db();
  const columns = db.prepare(`PRAGMA table_info(tasks)`).all() as Array<{ name: string; notnull: number; dflt_value: unknown }>;
  const now = Date.now();
  const ttlMs = 60 * 60 * 1000;
  const values = (i: number): Record<string, unknown> => {
    const createdAt = now - 60_000 - i * 50;
    return {
      id: crypto.randomUUID(),
      user_id: userId,
      session_id: null,
      client_name: 'bench-seed',
      client_version: '1.0.0',
      tool_name: 'delay',
      arguments: JSON.stringify({ seconds: 0 }),
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
      result: JSON.stringify({ content: [{ type: 'text', text: 'Waited 0 s.' }] }),
      error: null,
      attempt: 1,
    };
  };
  const known = Object.keys(values(0));
  const missing = columns.filter((column) => column.notnull && column.dflt_value === null && !known.includes(column.name));
  if (missing.length > 0) throw new Error(`tasks has required columns the seeder does not know: ${missing.map((c) => c.name).join(', ')}`);
  const used = known.filter((name) => columns.some((column) => column.name === name));
  const insertTask = db.prepare(`INSERT INTO tasks (${used.join(', ')}) VALUES (${used.map((name) => `@${name}`).join(', ')})`);
  const insertEvent = db.prepare(
    `INSERT INTO task_events (task_id, at, from_status, to_status, status_message, actor) VALUES (?, ?, ?, ?, ?, ?)`,
  );
  db.transaction(() => {
    for (let i = 0; i < count; i += 1) {
      const row = values(i);
      insertTask.run(Object.fromEntries(used.map((name) => [name, row[name]])));
      insertEvent.run(row.id, row.created_at, null, 'working', 'The task is working.', 'client');
      insertEvent.run(row.id, row.last_updated_at, 'working', 'completed', 'The task completed.', 'system');
    }
  })();
}

/** RSS of the whole group and of the next-server process alone (where the tasks run), sampled over `ms`. */
async function rssOver(pgid: number, ms: number, every = 500): Promise<{ median: number; max: number; nextMedian: number }> {
  const totals: number[] = [];
  const nexts: number[] = [];
  const sample = () => {
    totals.push(groupRssKib(pgid).totalKib);
    nexts.push(groupBreakdown(pgid).find((member) => member.name === 'next-server')?.rssKib ?? Number.NaN);
  };
  for (let waited = 0; waited < ms; waited += every) {
    sample();
    await sleep(every);
  }
  sample();
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return { median: median(totals), max: Math.max(...totals), nextMedian: median(nexts) };
}

/** The server's CPU use (% of one core) and bytes written per second over `ms`. */
async function activityOver(pgid: number, ms: number): Promise<{ cpuPercent: number; writtenPerSecond: number }> {
  const cpuBefore = groupCpuSeconds(pgid);
  const writtenBefore = groupWrittenBytes(pgid);
  const t0 = performance.now();
  await sleep(ms);
  const seconds = (performance.now() - t0) / 1000;
  return {
    cpuPercent: ((groupCpuSeconds(pgid) - cpuBefore) / seconds) * 100,
    writtenPerSecond: (groupWrittenBytes(pgid) - writtenBefore) / seconds,
  };
}

/** Benchmarks measure the server, not its rate limits. */
const noRateLimits = { RATE_LIMIT_PER_TOKEN: '0', RATE_LIMIT_PER_USER: '0', RATE_LIMIT_TASK_OPERATIONS_PER_USER: '0', RATE_LIMIT_UNKNOWN_TASKS_PER_USER: '0' };

async function main(): Promise<void> {
  log('starting the server (built app, temporary database, loopback port)');
  // The per-user limit on working tasks (when the server has one) is raised so that 500 can work at once.
  const server = await startServer({ TASK_MAX_ACTIVE_PER_USER: '10000', TASK_MAX_STORED_PER_USER: '1000000', ...noRateLimits });
  const watchdog = setTimeout(() => {
    log(`watchdog: the run took longer than ${config.watchdogMs / 1000} s; stopping`);
    void server.stop().finally(() => process.exit(1));
  }, config.watchdogMs);
  const interrupt = () => {
    void server.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    await benchmarks(server);
  } finally {
    clearTimeout(watchdog);
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await server.stop();
    fs.rmSync(server.dataDir, { recursive: true, force: true });
    log('server stopped, temporary directory removed');
  }
}

async function benchmarks(server: TestServer): Promise<void> {
  const pgid = findServerGroup();
  setServerCpuProbe(() => groupCpuSeconds(pgid));
  const token = createToken(server, 'bench@example.com', 'bench');
  const clients = await Promise.all(
    Array.from({ length: config.concurrency }, async () => {
      const client = new RawMcp(server.mcpUrl, token);
      await client.initialize();
      return client;
    }),
  );
  const [first] = clients;
  log(`server up on ${server.url} (process group ${pgid}); ${clients.length} clients initialized`);

  // Warm-up: the first requests load and JIT the route; none of them is measured.
  await runPool(config.warmup, config.concurrency, async (_i, w) => {
    const taskId = await startDelay(clients[w], 0);
    await clients[w].call('tasks/get', { taskId });
    await clients[w].call('tasks/result', { taskId });
    await clients[w].call('tasks/list', {});
  });
  const startupRss = groupRssKib(pgid);

  // 1. Task creation.
  record('1a. tools/call + task (delay 0), sequential', await sequential(config.createSequential, async () => void (await startDelay(first, 0))), 1, 'tasks/s');
  record(
    `1b. tools/call + task (delay 0), ${config.concurrency} clients`,
    await runPool(config.createConcurrent, config.concurrency, async (_i, w) => void (await startDelay(clients[w], 0))),
    config.concurrency,
    'tasks/s',
  );

  // 2. tasks/get on one existing (finished) task.
  const existing = await startDelay(first, 0);
  const get = async (client: RawMcp) => {
    const task = await client.call('tasks/get', { taskId: existing });
    if (task?.taskId !== existing) throw new Error(`tasks/get: ${JSON.stringify(task)}`);
  };
  record('2a. tasks/get, sequential', await sequential(config.getSequential, () => get(first)), 1);
  record(
    `2b. tasks/get, ${config.concurrency} clients`,
    await runPool(config.getConcurrent, config.concurrency, (_i, w) => get(clients[w])),
    config.concurrency,
  );

  // 0. Baseline: ping goes through the same endpoint (auth, session lookup, JSON-RPC) and touches no task.
  // Measured after the tasks/get runs, so that both meet an equally warm server.
  record('0. ping (baseline: auth + session + JSON-RPC), sequential', await sequential(config.ping, async () => void (await first.call('ping'))), 1);

  // 3. End to end: create, then tasks/result.
  let waited = 0;
  const e2e = async (client: RawMcp, seconds: number) => {
    if ((await roundTrip(client, seconds)) === 'waited') waited += 1;
  };
  record('3a. create + tasks/result (delay 0), sequential', await sequential(config.e2eSequential, () => e2e(first, 0)), 1, 'tasks/s');
  notes.push(`3a: tasks/result found the task already finished (plain JSON) in ${config.e2eSequential - waited} of ${config.e2eSequential} round trips; it waited on the bus (SSE) in ${waited}.`);
  waited = 0;
  record(
    `3b. create + tasks/result (delay 0), ${config.concurrency} clients`,
    await runPool(config.e2eConcurrent, config.concurrency, (_i, w) => e2e(clients[w], 0)),
    config.concurrency,
    'tasks/s',
  );
  notes.push(`3b: tasks/result waited on the bus (SSE) in ${waited} of ${config.e2eConcurrent} round trips.`);
  waited = 0;
  const busSamples = await sequential(config.e2eBusSequential, () => e2e(first, config.e2eBusSeconds));
  record(`3c. create + tasks/result (delay ${config.e2eBusSeconds} s), sequential`, busSamples, 1, 'tasks/s');
  const busMs = config.e2eBusSeconds * 1000;
  notes.push(
    `3c: every tasks/result here waits on the bus (${waited} of ${config.e2eBusSequential} were SSE); ` +
      `latency above the ${busMs} ms the tool sleeps: p50 ${fmt(busSamples.percentile(50) - busMs)} ms, ` +
      `p95 ${fmt(busSamples.percentile(95) - busMs)} ms.`,
  );

  // 4. tasks/list for users who already have many tasks, seeded straight into the database file.
  const seededUser = async (email: string, count: number) => {
    const userToken = createToken(server, email, 'bench');
    const user = server.db().prepare(`SELECT id FROM users WHERE email = ?`).get(email) as { id: string };
    const seedStarted = performance.now();
    seedTasks(server, user.id, count);
    log(`seeded ${count} tasks for ${email} in ${fmt(performance.now() - seedStarted, 0)} ms`);
    const client = new RawMcp(server.mcpUrl, userToken);
    await client.initialize();
    return client;
  };
  /** Follows nextCursor from the first page; cursors[i] opens page i + 1. */
  const walkPages = async (client: RawMcp, maxPages: number) => {
    const cursors: Array<string | undefined> = [undefined];
    const samples = new Samples();
    let listed = 0;
    const started = performance.now();
    for (let index = 0; index < maxPages; index += 1) {
      const cursor = cursors[index];
      const t0 = performance.now();
      const result = await client.call('tasks/list', cursor ? { cursor } : {});
      samples.add(performance.now() - t0);
      listed += result.tasks.length;
      if (!result.nextCursor) break;
      cursors.push(result.nextCursor);
    }
    samples.wallMs = performance.now() - started;
    return { cursors, samples, listed };
  };
  const listPage = (client: RawMcp, cursor?: string) => async () => {
    const result = await client.call('tasks/list', cursor ? { cursor } : {});
    if (!Array.isArray(result.tasks) || result.tasks.length === 0) throw new Error('tasks/list: empty page');
  };

  const lister = await seededUser('bench-list@example.com', config.listTasks);
  const walk = await walkPages(lister, config.listTasks);
  if (walk.listed !== config.listTasks) notes.push(`4: walking every page listed ${walk.listed} tasks, expected ${config.listTasks}.`);
  const pageSize = Math.round(walk.listed / walk.cursors.length);
  const deep = Math.min(config.deepPage, walk.cursors.length - 1);
  record(`4a. tasks/list first page (user with ${fmtInt(config.listTasks)} tasks)`, await sequential(config.listSamples, listPage(lister)), 1);
  record(`4b. tasks/list page ${deep + 1} via cursor`, await sequential(config.listSamples, listPage(lister, walk.cursors[deep])), 1);
  record(`4c. tasks/list, walk all ${walk.cursors.length} pages`, walk.samples, 1, 'pages/s');
  notes.push(`4: ${walk.listed} tasks listed over ${walk.cursors.length} pages of ${pageSize}; the deep page is page ${deep + 1} (tasks ${deep * pageSize + 1}–${(deep + 1) * pageSize}).`);

  // The same with ten times as many tasks: how list pages and task creation scale with a user's history.
  const heavy = await seededUser('bench-heavy@example.com', config.heavyTasks);
  const heavyWalk = await walkPages(heavy, config.heavyDeepPage + 1);
  const heavyDeep = heavyWalk.cursors.length - 1;
  record(`4d. tasks/list first page (user with ${fmtInt(config.heavyTasks)} tasks)`, await sequential(config.heavySamples, listPage(heavy)), 1);
  record(`4e. tasks/list page ${heavyDeep + 1} via cursor (same user)`, await sequential(config.heavySamples, listPage(heavy, heavyWalk.cursors[heavyDeep])), 1);
  record(
    `1c. tools/call + task (delay 0), sequential, user with ${fmtInt(config.heavyTasks)} tasks`,
    await sequential(config.heavySamples, async () => void (await startDelay(heavy, 0))),
    1,
    'tasks/s',
  );

  const size = (file: string) => {
    try {
      return fs.statSync(path.join(server.dataDir, file)).size;
    } catch {
      return 0;
    }
  };

  // 5. Memory: idle, then with workingTasks delay tasks working, then cancel them all.
  // The idle baseline follows the same burst of requests (tasks that end at once), so that both figures
  // carry the same request garbage and the difference is what the working tasks hold.
  await runPool(config.workingTasks, config.concurrency, async (_i, w) => void (await startDelay(clients[w], 0)));
  await sleep(config.settleMs);
  const idle = await rssOver(pgid, 2000);
  const idleActivity = await activityOver(pgid, 3000);
  const walBefore = size('app.db-wal');
  const working: string[] = [];
  const createWorking = await runPool(config.workingTasks, config.concurrency, async (_i, w) => {
    working.push(await startDelay(clients[w], config.workingSeconds));
  });
  record(`5a. create ${config.workingTasks} delay-${config.workingSeconds} tasks, ${config.concurrency} clients`, createWorking, config.concurrency, 'tasks/s');
  await sleep(config.settleMs);
  const walBusyStart = size('app.db-wal');
  const busyStarted = performance.now();
  const busyActivityPromise = activityOver(pgid, config.cpuWindowMs);
  const busy = await rssOver(pgid, config.cpuWindowMs);
  const busyActivity = await busyActivityPromise;
  const walBusyEnd = size('app.db-wal');
  const walGrowthPerSecond = (walBusyEnd - walBusyStart) / ((performance.now() - busyStarted) / 1000);
  const counts = server.db().prepare(`SELECT status, count(*) AS n FROM tasks WHERE id IN (SELECT value FROM json_each(?)) GROUP BY status`).all(JSON.stringify(working)) as Array<{ status: string; n: number }>;
  const stillWorking = counts.find((row) => row.status === 'working')?.n ?? 0;
  const probe = await first.call('tasks/get', { taskId: working[0] }).catch(() => undefined);
  const cancelAll = await runPool(working.length, config.concurrency, async (i, w) => {
    const task = await clients[w].call('tasks/cancel', { taskId: working[i] });
    if (task?.status !== 'cancelled') throw new Error(`tasks/cancel: ${JSON.stringify(task)}`);
  });
  record(`5b. tasks/cancel all ${working.length} working tasks, ${config.concurrency} clients`, cancelAll, config.concurrency);
  await sleep(3000);
  const after = await rssOver(pgid, 2000);
  const afterActivity = await activityOver(pgid, 3000);
  const walAfter = size('app.db-wal');
  const perTask = (busy.median - idle.median) / Math.max(1, stillWorking);
  memory.push(
    ['server processes in the group', String(groupRssKib(pgid).processes)],
    ['RSS after start-up and warm-up', mib(startupRss.totalKib)],
    [`RSS idle (after the same burst of ${config.workingTasks} delay-0 tasks; median over 2 s)`, mib(idle.median)],
    [`RSS with ${stillWorking} working delay tasks (median / max over ${config.cpuWindowMs / 1000} s)`, `${mib(busy.median)} / ${mib(busy.max)}`],
    ['RSS per working task', `${fmt(perTask, 1)} KiB`],
    ['next-server alone: idle / working / per task', `${mib(idle.nextMedian)} / ${mib(busy.nextMedian)} / ${fmt((busy.nextMedian - idle.nextMedian) / Math.max(1, stillWorking), 1)} KiB`],
    [`wall time to cancel all ${working.length} (${config.concurrency} clients)`, `${fmt(cancelAll.wallMs, 0)} ms`],
    ['RSS 3 s after cancelling them', mib(after.median)],
    ['server CPU / writes idle', `${fmt(idleActivity.cpuPercent, 1)} % of one core / ${mib(idleActivity.writtenPerSecond / 1024)}/s`],
    [`server CPU / writes with ${stillWorking} working tasks`, `${fmt(busyActivity.cpuPercent, 1)} % of one core / ${mib(busyActivity.writtenPerSecond / 1024)}/s`],
    ['server CPU / writes after cancelling them', `${fmt(afterActivity.cpuPercent, 1)} % of one core / ${mib(afterActivity.writtenPerSecond / 1024)}/s`],
    ['WAL file before / at the end of the working window / after cancelling', `${mib(walBefore / 1024)} / ${mib(walBusyEnd / 1024)} / ${mib(walAfter / 1024)}`],
    [`WAL file growth with ${stillWorking} working tasks`, `${mib(walGrowthPerSecond / 1024)}/s (${fmt(walGrowthPerSecond / 1024 / Math.max(1, stillWorking), 1)} KiB/s per task)`],
  );
  if (stillWorking !== working.length) notes.push(`5: only ${stillWorking} of ${working.length} tasks were still working when measured: ${JSON.stringify(counts)}.`);
  if (probe) notes.push(`5: a working task read back while loaded: progress message "${probe.statusMessage}".`);

  // 6. tasks/cancel latency on running tasks, one at a time.
  const toCancel: string[] = [];
  await runPool(config.cancelSequential, config.concurrency, async (_i, w) => {
    toCancel.push(await startDelay(clients[w], config.workingSeconds));
  });
  await sleep(1000);
  record(
    `6. tasks/cancel on a working task, sequential (${config.cancelSequential} running at the start)`,
    await sequential(toCancel.length, async (i) => {
      const task = await first.call('tasks/cancel', { taskId: toCancel[i] });
      if (task?.status !== 'cancelled') throw new Error(`tasks/cancel: ${JSON.stringify(task)}`);
    }),
    1,
  );

  // Database state at the end, and anything the server logged as an error.
  const db = server.db();
  const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
  memory.push(
    ['tasks rows at the end', fmtInt(count(`SELECT count(*) AS n FROM tasks`))],
    ['tasks still working at the end', fmtInt(count(`SELECT count(*) AS n FROM tasks WHERE status = 'working'`))],
    ['task_events rows at the end', fmtInt(count(`SELECT count(*) AS n FROM task_events`))],
    ['session_messages rows at the end (no GET stream was ever opened)', fmtInt(count(`SELECT count(*) AS n FROM session_messages`))],
    ['database file / WAL file', `${mib(size('app.db') / 1024)} / ${mib(size('app.db-wal') / 1024)}`],
  );
  await sleep(3000);
  const end = await rssOver(pgid, 2000);
  memory.push(['RSS at the end, after 5 s without requests', mib(end.median)]);
  notes.push(
    `RSS by process at the end: ${groupBreakdown(pgid)
      .map(({ pid, name, rssKib }) => `${name} (pid ${pid}) ${mib(rssKib)}`)
      .join(', ')}.`,
  );
  if (server.output().includes('Building the application')) {
    notes.push('the sources were newer than the build, so the server rebuilt the app before starting (not part of any figure).');
  }
  const errorLines = server
    .output()
    .split('\n')
    .filter((line) => /error|warn|unhandled/i.test(line));
  notes.push(`server log: ${errorLines.length} line(s) mentioning error/warn${errorLines.length ? `, first: ${errorLines[0].slice(0, 200)}` : ''}.`);

  print();
}

const percent = (value: number) => (Number.isFinite(value) ? `${fmt(value, 0)} %` : '–');

function print(): void {
  const cpus = os.cpus();
  const lines = [
    `## Results`,
    '',
    `${os.cpus().length} × ${cpus[0]?.model.trim() ?? 'CPU'}, ${mib(os.totalmem() / 1024)} RAM, Node ${process.version}, ${os.type()} ${os.release()}; ` +
      `client and server share the machine. Total run ${fmt((performance.now() - startedAt) / 1000, 0)} s; ` +
      `1-min load average ${fmt(loadAtStart[0])} at the start, ${fmt(os.loadavg()[0])} at the end.`,
    '',
    markdownTable(
      ['benchmark', 'n', 'concurrency', 'p50 ms', 'p95 ms', 'p99 ms', 'throughput', 'server CPU', 'server CPU ms/op', 'client CPU', 'errors'],
      [...rows].sort((a, b) => a.benchmark.localeCompare(b.benchmark, 'en', { numeric: true })).map(({ benchmark, samples, concurrency, unit }) => [
        benchmark,
        String(samples.values.length),
        String(concurrency),
        fmt(samples.percentile(50)),
        fmt(samples.percentile(95)),
        fmt(samples.percentile(99)),
        `${fmtInt(samples.throughput())} ${unit}`,
        percent(samples.cpuPercent('server')),
        fmt((samples.serverCpuS * 1000) / samples.values.length),
        percent(samples.cpuPercent('client')),
        samples.errors ? `${samples.errors} (${samples.firstError?.slice(0, 80)})` : '0',
      ]),
    ),
    '',
    markdownTable(['measure', 'value'], memory),
    '',
    '- server CPU / client CPU: average use during the run in % of one core (the server is its whole process group; the client is this process); server CPU ms/op: server CPU time per completed operation.',
    '- writes: bytes the server passed to write(2) (/proc/<pid>/io wchar), mostly SQLite WAL frames.',
    ...notes.map((note) => `- ${note}`),
    '',
  ];
  process.stdout.write(lines.join('\n'));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
