import fs from 'node:fs';
import path from 'node:path';
import { storageTroubleOf, type StorageTroubleKind } from '@/db/errors';
import { getStore } from '@/db/client';
import { getEnv } from '@/lib/env';

export const MiB = 1024 * 1024;

/** What /healthz and the dashboard's banner say of storage. Nothing private: no path, no user, no data. */
export interface StorageReport {
  /** Whether a write would be taken now. */
  writable: boolean;
  /** Why not, when not. */
  trouble?: StorageTroubleKind;
  database: 'sqlite' | 'postgresql';
  /** Free space on the database's disk (SQLite), in MiB. */
  freeMiB?: number;
  /** Free space below STORAGE_WARN_FREE_MB. */
  lowSpace: boolean;
  checkedAt: string;
}

/**
 * A full disk or a failing one, seen in a refused write, counts for this long even when the probe finds
 * nothing: a probe writes nothing, so a full disk takes it and still refuses a task.
 */
const troubleMemoryMs = 10_000;
/**
 * A report that finds nothing wrong is reused for this long: load balancers poll often, and every page
 * shows the banner. One that finds trouble is not reused: the trouble may have ended a moment later,
 * and a page rendered from the database must not say the database cannot be reached.
 */
const reportCacheMs = 1_000;

/** Free bytes for this user on the disk holding `folder` (statfs), or undefined where it cannot be read. */
export function freeBytes(folder: string): number | undefined {
  try {
    const stats = fs.statfsSync(folder);
    return stats.bavail * stats.bsize;
  } catch {
    return undefined;
  }
}

class StorageHealth {
  private lastTrouble: { kind: StorageTroubleKind; at: number } | undefined;
  private cached: { report: StorageReport; at: number } | undefined;
  private checking: Promise<StorageReport> | undefined;
  private warnedLow = false;

  /** A refusal just met: the next report looks again, and remembers a full or failing disk for a while. */
  noteTrouble(kind: StorageTroubleKind): void {
    this.cached = undefined;
    // The probe sees the others as they are now.
    if (kind === 'full' || kind === 'io') this.lastTrouble = { kind, at: Date.now() };
  }

  /** The report: checked at most once a second while storage is well, and on every ask while it is not. */
  report(): Promise<StorageReport> {
    if (this.cached && Date.now() - this.cached.at < reportCacheMs) return Promise.resolve(this.cached.report);
    this.checking ??= this.check()
      .then((report) => {
        this.cached = report.writable ? { report, at: Date.now() } : undefined;
        return report;
      })
      .finally(() => {
        this.checking = undefined;
      });
    return this.checking;
  }

  private async check(): Promise<StorageReport> {
    const env = getEnv();
    const store = getStore();
    const checkedAt = new Date().toISOString();
    let trouble = await probe();
    const recent = this.lastTrouble && Date.now() - this.lastTrouble.at < troubleMemoryMs ? this.lastTrouble.kind : undefined;
    let freeMiB: number | undefined;
    if (store.dialect === 'sqlite') {
      const free = freeBytes(path.dirname(path.resolve(env.DATABASE_PATH)));
      if (free !== undefined) freeMiB = Math.floor((free / MiB) * 10) / 10;
      // A disk with no room left takes the probe (it writes nothing) but no task.
      if (!trouble && free !== undefined && free < 64 * 1024) trouble = 'full';
    }
    trouble ??= recent;
    const lowSpace = freeMiB !== undefined && freeMiB < env.STORAGE_WARN_FREE_MB;
    if (lowSpace && !this.warnedLow) console.warn(`Storage: ${freeMiB} MiB free on the database's disk, below STORAGE_WARN_FREE_MB (${env.STORAGE_WARN_FREE_MB}).`);
    this.warnedLow = lowSpace;
    return { writable: trouble === undefined, ...(trouble ? { trouble } : {}), database: store.dialect === 'sqlite' ? 'sqlite' : 'postgresql', ...(freeMiB !== undefined ? { freeMiB } : {}), lowSpace, checkedAt };
  }
}

/**
 * Whether the database would take a write now, without writing: SQLite takes and drops its write lock
 * (busy, read-only and a removed file all show there); PostgreSQL is asked whether a transaction would be
 * read-only.
 */
async function probe(): Promise<StorageTroubleKind | undefined> {
  const store = getStore();
  try {
    if (store.dialect === 'sqlite') {
      const file = path.resolve(getEnv().DATABASE_PATH);
      if (!fs.existsSync(file)) return 'gone';
      store.sqlite.exec('BEGIN IMMEDIATE; ROLLBACK');
      return undefined;
    }
    const { rows } = await store.pool.query<{ readonly: string; recovery: boolean }>("SELECT current_setting('transaction_read_only') AS readonly, pg_is_in_recovery() AS recovery");
    return rows[0].readonly === 'on' || rows[0].recovery ? 'readonly' : undefined;
  } catch (error) {
    if (store.dialect === 'sqlite' && store.sqlite.inTransaction) store.sqlite.exec('ROLLBACK');
    return storageTroubleOf(error)?.kind ?? 'io';
  }
}

const globalForHealth = globalThis as unknown as { __mcpTaskServerStorageHealth?: StorageHealth };

/** This process's view of its storage, shared by every route bundle. */
export function storageHealth(): StorageHealth {
  globalForHealth.__mcpTaskServerStorageHealth ??= new StorageHealth();
  return globalForHealth.__mcpTaskServerStorageHealth;
}
