import { performance } from 'node:perf_hooks';
import Database from '@/db/sqlite';
import { RawMcp } from '../tests/helpers/mcp';
import { startOurs } from './peers';
import { fmt, fmtInt, groupCpuSeconds, markdownTable, runPool, Samples, sleep } from './util';

const config = { reads: 2_000, readers: 10, writers: 50, quietMs: 1_500 };

/**
 * When another process holds SQLite's write lock (a backup, `sqlite3` at a prompt): how fast reads are
 * answered while writes wait for it, beside the same reads with no lock held; what the waiting writes
 * cost the server's CPU; and how soon they are all written once the lock is let go.
 */
export async function measureStorage(log: (message: string) => void): Promise<string> {
  const ours = await startOurs({ DATABASE_BUSY_TIMEOUT_MS: '30000' });
  const { server } = ours;
  const holder = new Database(server.dbPath);
  try {
    const mcp = new RawMcp(server.mcpUrl, ours.token);
    await mcp.initialize();
    const known = await mcp.startDelayTask(0);
    const read = async () => {
      const reply = await mcp.request('tasks/get', { taskId: known.taskId });
      if (reply.status !== 200 || reply.body.error) throw new Error(`tasks/get: ${reply.status}`);
    };
    await runPool(config.reads / 4, config.readers, read);

    log(`storage: ${config.reads} tasks/get, ${config.readers} at a time, no lock held`);
    const free = await runPool(config.reads, config.readers, read);

    log(`storage: the same while another process holds the write lock and ${config.writers} task creations wait for it`);
    holder.exec('BEGIN IMMEDIATE');
    const written = new Samples();
    let releasedAt = Number.NaN;
    const writes = Array.from({ length: config.writers }, async () => {
      try {
        const task = await mcp.startDelayTask(0);
        if (!task?.taskId) throw new Error('no task');
        written.add(performance.now() - releasedAt);
      } catch (error) {
        written.fail(error);
      }
    });
    const locked = await runPool(config.reads, config.readers, read);
    // Then nothing but the waiting writes: what waiting costs.
    const cpuBefore = groupCpuSeconds(ours.pgid);
    await sleep(config.quietMs);
    const waitingCpuS = groupCpuSeconds(ours.pgid) - cpuBefore;
    holder.exec('COMMIT');
    releasedAt = performance.now();
    await Promise.all(writes);
    log(`storage: the same reads again, the lock let go`);
    const after = await runPool(config.reads, config.readers, read);

    return [
      markdownTable(
        ['tasks/get', 'req/s', 'p50 ms', 'p99 ms', 'errors'],
        [
          ['no lock held', fmtInt(free.throughput()), fmt(free.percentile(50)), fmt(free.percentile(99)), String(free.errors)],
          [`another process holds the write lock; ${config.writers} writes wait`, fmtInt(locked.throughput()), fmt(locked.percentile(50)), fmt(locked.percentile(99)), String(locked.errors)],
          ['no lock held (again, after)', fmtInt(after.throughput()), fmt(after.percentile(50)), fmt(after.percentile(99)), String(after.errors)],
        ],
      ),
      '',
      `Server CPU while ${config.writers} writes wait for the lock and nothing else runs: ${fmt((waitingCpuS / (config.quietMs / 1000)) * 100, 1)} % of one core. ` +
        `After the lock was let go, the waiting writes were all written within ${fmt(Math.max(...written.values), 0)} ms (p50 ${fmt(written.percentile(50), 0)} ms); errors: ${written.errors}.`,
    ].join('\n');
  } finally {
    if (holder.inTransaction) holder.exec('ROLLBACK');
    holder.close();
    await ours.stop();
  }
}
