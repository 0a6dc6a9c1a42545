import type { TaskRow } from '@/db/queries/tasks';

export type ProgressUpdate = { progress: number; progressTotal: number | null; progressMessage: string | null };

/**
 * A running task's progress, stored at most once per interval (the latest report last) while every
 * report is still published: a tool reporting twice a second would otherwise turn each report into a
 * write, and hundreds of such tasks keep a core busy writing WAL frames nobody reads.
 */
export class CoalescedProgress {
  private lastWriteAt = 0;
  private pending: ProgressUpdate | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private row: TaskRow,
    private readonly write: (update: ProgressUpdate) => TaskRow | undefined,
    private readonly intervalMs: number,
  ) {}

  /** The task as it stands after this report, or undefined once it is no longer active. */
  report(update: ProgressUpdate): TaskRow | undefined {
    const now = Date.now();
    const sinceWrite = now - this.lastWriteAt;
    if (sinceWrite >= this.intervalMs) return this.store(update);
    this.pending = update;
    this.row = { ...this.row, ...update, lastUpdatedAt: Math.max(now, this.row.lastUpdatedAt) };
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (this.pending) this.store(this.pending);
    }, this.intervalMs - sinceWrite);
    this.timer.unref?.();
    return this.row;
  }

  /** Stores the latest report now if it is not stored yet: the tool is done, and its last report stays. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending) this.store(this.pending);
  }

  /** Drops what is not stored yet: the task was stopped, and how it stopped is what counts. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = undefined;
  }

  private store(update: ProgressUpdate): TaskRow | undefined {
    this.pending = undefined;
    this.lastWriteAt = Date.now();
    const stored = this.write(update);
    if (stored) this.row = stored;
    return stored;
  }
}
