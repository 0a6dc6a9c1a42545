import type { TaskRow } from '@/db/queries/tasks';

export type ProgressUpdate = Partial<{ progress: number; progressTotal: number | null; progressMessage: string | null; statusMessage: string }>;

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
  private active = true;

  constructor(
    private row: TaskRow,
    /** Stores the row's progress and status message; false once the task is no longer active. */
    private readonly write: (row: TaskRow) => boolean,
    private readonly intervalMs: number,
  ) {}

  /** The task as it stands after this report, or undefined once it is known to be no longer active. */
  report(update: ProgressUpdate): TaskRow | undefined {
    if (!this.active) return undefined;
    const now = Date.now();
    this.row = { ...this.row, ...update, lastUpdatedAt: Math.max(now, this.row.lastUpdatedAt + 1) };
    this.timer ??= setTimeout(() => this.store(), Math.max(0, this.lastWriteAt + this.intervalMs - now));
    this.timer.unref?.();
    return this.row;
  }

  /** Stores the latest report now if it is not stored yet: the tool is done, and its last report stays. */
  flush(): void {
    if (this.timer) this.store();
  }

  /** Drops what is not stored yet: the task was stopped, and how it stopped is what counts. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private store(): void {
    this.stop();
    this.lastWriteAt = Date.now();
    this.active = this.write(this.row);
  }
}
