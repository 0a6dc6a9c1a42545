import type { TaskRow } from '@/db/queries/tasks';

export type ProgressUpdate = Partial<{ progress: number; progressTotal: number | null; progressMessage: string | null; statusMessage: string; partialOutput: string }>;

/** A row to store with the next batch, and who learns whether its task was still active. */
export interface PendingWrite {
  readonly row: TaskRow;
  stored(active: boolean): void;
}

/**
 * Progress writes of all running tasks, stored together: what falls due in one turn of the event loop
 * is written in one transaction at its end (thousands of working tasks would otherwise be thousands of
 * commits a second). `storeAll` stores rows and resolves with which tasks are still active; a result
 * given at once (not a promise) is taken at once.
 */
export class ProgressWrites {
  private readonly queued = new Map<string, PendingWrite>();
  private scheduled = false;

  constructor(
    private readonly storeAll: (rows: TaskRow[]) => Promise<boolean[]> | boolean[],
    /** Runs the batch at the end of this turn. */
    private readonly atEndOfTurn: (flush: () => void) => void = setImmediate,
  ) {}

  /** Stores the entry's row at the end of this turn; its `stored` learns whether the task was still active. */
  queue(entry: PendingWrite): void {
    this.queued.set(entry.row.id, entry);
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
 *
 * A report allocates nothing of its own: what lives from one report to the next (a timer, a callback,
 * a batch entry) outlives V8's young collections, and ten thousand reporting tasks would fill the old
 * generation with it. So the row is changed in place, the task is its own batch entry, and while reports
 * keep coming one timer, made once, comes round every interval.
 */
export class CoalescedProgress implements PendingWrite {
  private lastWriteAt = 0;
  /** The timer that will store the latest report, when one is armed. */
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The timer made with the interval as its delay: armed again with refresh(), never made twice. */
  private everyInterval: ReturnType<typeof setTimeout> | undefined;
  /** A report has come since the last write. */
  private dirty = false;
  /** A report waits in the batch of this turn. */
  private queued = false;
  private active = true;

  constructor(
    readonly row: TaskRow,
    private readonly writes: ProgressWrites,
    private readonly intervalMs: number,
  ) {}

  /** The task as it stands after this report, or undefined once it is known to be no longer active. */
  report(update: ProgressUpdate): TaskRow | undefined {
    if (!this.active) return undefined;
    const now = Date.now();
    // Listeners read the row at once; the store reads it when its turn comes.
    Object.assign(this.row, update);
    this.row.lastUpdatedAt = Math.max(now, this.row.lastUpdatedAt + 1);
    this.dirty = true;
    if (!this.timer) this.arm(Math.max(0, this.lastWriteAt + this.intervalMs - now));
    return this.row;
  }

  /** Stores the latest report now if it is not stored yet: the tool is done, and its last report stays. */
  async flush(): Promise<void> {
    if (!this.dirty && !this.queued) return;
    this.cancelTimer();
    this.dirty = false;
    this.queued = false;
    this.lastWriteAt = Date.now();
    this.active = await this.writes.storeNow(this.row);
  }

  /** Drops what is not stored yet: the task was stopped, and how it stopped is what counts. */
  stop(): void {
    this.cancelTimer();
    if (this.queued) this.writes.drop(this.row.id);
    this.dirty = false;
    this.queued = false;
  }

  /** The batch stored this task's row: whether the task was still active. */
  stored(active: boolean): void {
    this.queued = false;
    this.active &&= active;
  }

  private arm(delayMs: number): void {
    if (delayMs !== this.intervalMs) {
      this.timer = setTimeout(this.due, delayMs);
    } else {
      this.everyInterval = this.everyInterval ? this.everyInterval.refresh() : setTimeout(this.due, delayMs);
      this.timer = this.everyInterval;
    }
    this.timer.unref?.();
  }

  private cancelTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    // A cleared timer cannot be armed again.
    this.everyInterval = undefined;
  }

  /** The interval is over: the latest report joins this turn's batch, and the next interval begins. */
  private readonly due = (): void => {
    this.timer = undefined;
    // Quiet for a whole interval: no timer until the next report.
    if (!this.dirty) return;
    this.dirty = false;
    this.lastWriteAt = Date.now();
    this.queued = true;
    this.writes.queue(this);
    this.arm(this.intervalMs);
  };
}
