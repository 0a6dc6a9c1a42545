import type { TaskRow } from '@/db/queries/tasks';

export type ProgressUpdate = Partial<{ progress: number; progressTotal: number | null; progressMessage: string | null; statusMessage: string; partialOutput: string }>;

/**
 * Progress writes of all running tasks, stored together: what falls due in one turn of the event loop
 * is written in one transaction at its end (thousands of working tasks would otherwise be thousands of
 * commits a second). `storeAll` stores rows and resolves with which tasks are still active; a result
 * given at once (not a promise) is taken at once.
 */
export class ProgressWrites {
  private readonly queued = new Map<string, { row: TaskRow; stored: (active: boolean) => void }>();
  private scheduled = false;

  constructor(
    private readonly storeAll: (rows: TaskRow[]) => Promise<boolean[]> | boolean[],
    /** Runs the batch at the end of this turn. */
    private readonly atEndOfTurn: (flush: () => void) => void = setImmediate,
  ) {}

  /** Stores the row at the end of this turn; `stored` learns whether the task was still active. */
  queue(row: TaskRow, stored: (active: boolean) => void): void {
    this.queued.set(row.id, { row, stored });
    if (this.scheduled) return;
    this.scheduled = true;
    this.atEndOfTurn(() => this.flush());
  }

  /** Stores the row now, in place of any queued one of the same task; resolves with whether the task was still active. */
  async storeNow(row: TaskRow): Promise<boolean> {
    this.queued.delete(row.id);
    return (await this.storeAll([row]))[0];
  }

  /** Forgets a queued row of the task. */
  drop(taskId: string): void {
    this.queued.delete(taskId);
  }

  private flush(): void {
    this.scheduled = false;
    const batch = [...this.queued.values()];
    this.queued.clear();
    if (batch.length === 0) return;
    const settle = (active: boolean[]) => batch.forEach((entry, index) => entry.stored(active[index]));
    const failed = (error: unknown) => console.error('Storing the progress of running tasks failed', error);
    let active: Promise<boolean[]> | boolean[];
    try {
      active = this.storeAll(batch.map((entry) => entry.row));
    } catch (error) {
      failed(error);
      return;
    }
    if (Array.isArray(active)) settle(active);
    else active.then(settle, failed);
  }
}

/**
 * A running task's progress and status message, stored at most once per interval (the latest values
 * last) while every report is still published: a tool reporting twice a second would otherwise turn
 * each report into a write, and hundreds of such tasks keep a core busy writing WAL frames nobody reads.
 * Even the first write waits for the current turn of the event loop to end, so that a progress report
 * and a status message given together are stored together.
 */
export class CoalescedProgress {
  private lastWriteAt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** A report waits in the batch of this turn. */
  private queued = false;
  private active = true;

  constructor(
    private readonly row: TaskRow,
    private readonly writes: ProgressWrites,
    private readonly intervalMs: number,
  ) {}

  /** The task as it stands after this report, or undefined once it is known to be no longer active. */
  report(update: ProgressUpdate): TaskRow | undefined {
    if (!this.active) return undefined;
    const now = Date.now();
    // Changed in place: a copy per report would be garbage that outlives young collections, and
    // thousands of working tasks would fill the old generation with it. Listeners read it at once.
    Object.assign(this.row, update, { lastUpdatedAt: Math.max(now, this.row.lastUpdatedAt + 1) });
    this.timer ??= setTimeout(() => this.store(), Math.max(0, this.lastWriteAt + this.intervalMs - now));
    this.timer.unref?.();
    return this.row;
  }

  /** Stores the latest report now if it is not stored yet: the tool is done, and its last report stays. */
  async flush(): Promise<void> {
    if (!this.timer && !this.queued) return;
    this.cancelTimer();
    this.queued = false;
    this.lastWriteAt = Date.now();
    this.active = await this.writes.storeNow(this.row);
  }

  /** Drops what is not stored yet: the task was stopped, and how it stopped is what counts. */
  stop(): void {
    this.cancelTimer();
    if (this.queued) this.writes.drop(this.row.id);
    this.queued = false;
  }

  private cancelTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The interval is over: the latest report joins this turn's batch. */
  private store(): void {
    this.cancelTimer();
    this.lastWriteAt = Date.now();
    this.queued = true;
    this.writes.queue(this.row, (active) => {
      this.queued = false;
      this.active &&= active;
    });
  }
}
