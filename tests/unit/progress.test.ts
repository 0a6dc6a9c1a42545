import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TaskRow } from '@/db/queries/tasks';
import { CoalescedProgress, type ProgressUpdate } from '@/lib/tasks/progress';

const row = { id: 't1', progress: null, progressTotal: null, progressMessage: null, lastUpdatedAt: 0 } as unknown as TaskRow;
const update = (progress: number): ProgressUpdate => ({ progress, progressTotal: 10, progressMessage: `step ${progress}` });

describe('coalesced progress', () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it('writes the first report at once, then at most once per interval, and the latest report last', () => {
    const writes: number[] = [];
    const progress = new CoalescedProgress(row, (u) => (writes.push(u.progress), { ...row, ...u }), 1000);
    expect(progress.report(update(1))?.progress).toBe(1);
    for (let step = 2; step <= 5; step += 1) {
      vi.advanceTimersByTime(100);
      // Every report is returned as the task now stands, written or not.
      expect(progress.report(update(step))?.progressMessage).toBe(`step ${step}`);
    }
    expect(writes).toEqual([1]);
    vi.advanceTimersByTime(600);
    expect(writes).toEqual([1, 5]);
    vi.advanceTimersByTime(5000);
    expect(writes).toEqual([1, 5]);
  });

  it('writes the latest report at once when flushed, and nothing more after', () => {
    const writes: number[] = [];
    const progress = new CoalescedProgress(row, (u) => (writes.push(u.progress), { ...row, ...u }), 1000);
    progress.report(update(1));
    progress.report(update(2));
    progress.flush();
    expect(writes).toEqual([1, 2]);
    vi.advanceTimersByTime(2000);
    progress.flush();
    expect(writes).toEqual([1, 2]);
  });

  it('drops what is not written yet once stopped, and says when the task is no longer active', () => {
    const writes: number[] = [];
    let active = true;
    const progress = new CoalescedProgress(row, (u) => (writes.push(u.progress), active ? { ...row, ...u } : undefined), 1000);
    progress.report(update(1));
    progress.report(update(2));
    progress.stop();
    vi.advanceTimersByTime(2000);
    expect(writes).toEqual([1]);
    active = false;
    expect(progress.report(update(3))).toBeUndefined();
  });
});
