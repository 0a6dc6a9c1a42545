import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';

/** Latency samples in milliseconds, plus the errors seen while collecting them. */
export class Samples {
  readonly values: number[] = [];
  errors = 0;
  firstError?: string;
  wallMs = 0;
  /** CPU seconds the server's process group and this client process used during the run. */
  serverCpuS = Number.NaN;
  clientCpuS = Number.NaN;

  add(ms: number): void {
    this.values.push(ms);
  }

  fail(error: unknown): void {
    this.errors += 1;
    this.firstError ??= error instanceof Error ? error.message : String(error);
  }

  /** Nearest-rank percentile, p in 0..100. */
  percentile(p: number): number {
    if (this.values.length === 0) return Number.NaN;
    const sorted = [...this.values].sort((a, b) => a - b);
    const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
    return sorted[rank - 1];
  }

  /** Operations per second over the wall-clock time of the whole run. */
  throughput(): number {
    return this.wallMs > 0 ? (this.values.length / this.wallMs) * 1000 : Number.NaN;
  }

  /** Average CPU use over the run, in % of one core. */
  cpuPercent(which: 'server' | 'client'): number {
    const seconds = which === 'server' ? this.serverCpuS : this.clientCpuS;
    return this.wallMs > 0 ? (seconds / (this.wallMs / 1000)) * 100 : Number.NaN;
  }
}

let serverCpuProbe: (() => number) | undefined;

/** Lets runPool report how much CPU the server used during each run. */
export function setServerCpuProbe(probe: () => number): void {
  serverCpuProbe = probe;
}

/** Runs `op` `total` times, `concurrency` at a time; worker w gets only indexes it pulled itself. */
export async function runPool(
  total: number,
  concurrency: number,
  op: (index: number, worker: number) => Promise<void>,
): Promise<Samples> {
  const samples = new Samples();
  let next = 0;
  const serverCpuBefore = serverCpuProbe?.() ?? Number.NaN;
  const clientCpuBefore = process.cpuUsage();
  const started = performance.now();
  const worker = async (w: number) => {
    for (;;) {
      const index = next++;
      if (index >= total) return;
      const t0 = performance.now();
      try {
        await op(index, w);
        samples.add(performance.now() - t0);
      } catch (error) {
        samples.fail(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, (_, w) => worker(w)));
  samples.wallMs = performance.now() - started;
  samples.serverCpuS = (serverCpuProbe?.() ?? Number.NaN) - serverCpuBefore;
  const clientCpu = process.cpuUsage(clientCpuBefore);
  samples.clientCpuS = (clientCpu.user + clientCpu.system) / 1e6;
  return samples;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// --- The server's process group, read from /proc ---------------------------------------------------

interface ProcStat {
  pid: number;
  /** The command name (/proc/<pid>/comm: the executable's name, not a retitled argv). */
  comm: string;
  ppid: number;
  pgrp: number;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
  /** cutime + cstime: what its exited children it has waited for used, in clock ticks. */
  reapedChildTicks: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3, "state".
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return {
      pid,
      comm: text.slice(text.indexOf('(') + 1, text.lastIndexOf(')')),
      ppid: Number(rest[1]),
      pgrp: Number(rest[2]),
      cpuTicks: Number(rest[11]) + Number(rest[12]),
      reapedChildTicks: Number(rest[13]) + Number(rest[14]),
    };
  } catch {
    return undefined;
  }
}

function allPids(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

function readCmdline(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/**
 * The process group of the server this process started: startServer spawns it detached, as a direct
 * child running scripts/start.mjs, so its pid is the group id.
 */
export function findServerGroup(): number {
  const candidates = allPids().filter((pid) => {
    const stat = readStat(pid);
    return stat?.ppid === process.pid && stat.pgrp === pid && readCmdline(pid).includes('scripts/start.mjs');
  });
  if (candidates.length !== 1) throw new Error(`expected one server process group, found ${candidates.length}`);
  return candidates[0];
}

function groupMembers(pgid: number): ProcStat[] {
  return allPids()
    .map(readStat)
    .filter((stat): stat is ProcStat => stat !== undefined && stat.pgrp === pgid);
}

function rssKib(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** Each process of the group with its resident set size, in KiB. */
export function groupBreakdown(pgid: number): Array<{ pid: number; name: string; rssKib: number }> {
  return groupMembers(pgid).map(({ pid }) => {
    const args = readCmdline(pid).trim();
    const name = args.includes('scripts/start.mjs') ? 'node scripts/start.mjs (server)' : args.split(' ')[0];
    return { pid, name, rssKib: rssKib(pid) };
  });
}

/** Resident set size summed over every process of the group, in KiB. */
export function groupRssKib(pgid: number): { totalKib: number; processes: number } {
  const members = groupMembers(pgid);
  return { totalKib: members.reduce((sum, member) => sum + rssKib(member.pid), 0), processes: members.length };
}

export const clockTicksPerSecond = (() => {
  const result = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const value = Number(result.stdout?.trim());
  return Number.isFinite(value) && value > 0 ? value : 100;
})();

/** CPU seconds (user + system) used so far by the group's live processes. */
export function groupCpuSeconds(pgid: number): number {
  return groupMembers(pgid).reduce((sum, member) => sum + member.cpuTicks, 0) / clockTicksPerSecond;
}

/** The pids of this process's direct children whose command name is `comm` (e.g. `haproxy`). */
export function childrenNamed(comm: string): number[] {
  return allPids()
    .map(readStat)
    .filter((stat): stat is ProcStat => stat !== undefined && stat.ppid === process.pid && stat.comm === comm)
    .map((stat) => stat.pid);
}

/** CPU seconds (user + system, all threads) used so far by these processes and their live children. */
export function processTreeCpuSeconds(pids: number[]): number {
  const stats = allPids().map(readStat).filter((stat): stat is ProcStat => stat !== undefined);
  return stats.filter((stat) => pids.includes(stat.pid) || pids.includes(stat.ppid)).reduce((sum, stat) => sum + stat.cpuTicks, 0) / clockTicksPerSecond;
}

/**
 * CPU seconds used so far by PostgreSQL: every process named `postgres` on this machine (the postmaster,
 * its backends and background workers), plus, for each postmaster, its exited children's time (cutime +
 * cstime), so a backend that ends between two readings still counts. That is the database server of the
 * bench only when nothing else uses a PostgreSQL server on the machine meanwhile.
 */
export function postgresCpuSeconds(): number {
  const stats = allPids().map(readStat).filter((stat): stat is ProcStat => stat !== undefined);
  const postgres = stats.filter((stat) => stat.comm === 'postgres');
  const pids = new Set(postgres.map((stat) => stat.pid));
  const ticks = postgres.reduce((sum, stat) => sum + stat.cpuTicks + (pids.has(stat.ppid) ? 0 : stat.reapedChildTicks), 0);
  return ticks / clockTicksPerSecond;
}

/** Bytes the group's live processes have passed to write(2) and friends so far (/proc/<pid>/io wchar). */
export function groupWrittenBytes(pgid: number): number {
  return groupMembers(pgid).reduce((sum, member) => {
    try {
      const match = /^wchar:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${member.pid}/io`, 'utf8'));
      return sum + (match ? Number(match[1]) : 0);
    } catch {
      return sum;
    }
  }, 0);
}

// --- Formatting ------------------------------------------------------------------------------------

export const fmt = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
export const fmtInt = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–');
export const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;

export function markdownTable(header: string[], rows: string[][]): string {
  const align = header.map((_, i) => (i === 0 ? '---' : '---:'));
  return [header, align, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}
