import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TaskRow } from '@/db/queries/tasks';
import { CoalescedProgress, type ProgressUpdate } from '@/lib/tasks/progress';

const row = { id: 't1', progress: null, progressTotal: null, progressMessage: null, statusMessage: 'Started', lastUpdatedAt: 0 } as unknown as TaskRow;
const update = (progress: number): ProgressUpdate => ({ progress, progressTotal: 10, progressMessage: `step ${progress}` });
const live = (current: TaskRow) => ({ progress: current.progress, statusMessage: current.statusMessage });

function recorder(active = () => true) {
  const writes: Array<ReturnType<typeof live>> = [];
  return { writes, write: (current: TaskRow) => (writes.push(live(current)), active()) };
}

describe('coalesced progress', () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it('stores the first reports once the current turn ends, then at most once per interval, the latest last', () => {
    const { writes, write } = recorder();
    const progress = new CoalescedProgress(row, write, 1000);
    expect(progress.report(update(1))?.progress).toBe(1);
    expect(progress.report({ statusMessage: 'One' })?.statusMessage).toBe('One');
    expect(writes).toEqual([]);
    vi.advanceTimersByTime(0);
    expect(writes).toEqual([{ progress: 1, statusMessage: 'One' }]);
    for (let step = 2; step <= 5; step += 1) {
      vi.advanceTimersByTime(100);
      // Every report is returned as the task now stands, stored or not.
      expect(progress.report(update(step))?.progressMessage).toBe(`step ${step}`);
    }
    expect(writes).toHaveLength(1);
    vi.advanceTimersByTime(600);
    expect(writes).toEqual([{ progress: 1, statusMessage: 'One' }, { progress: 5, statusMessage: 'One' }]);
    vi.advanceTimersByTime(5000);
    expect(writes).toHaveLength(2);
  });

  it('stores the latest report at once when flushed, and nothing more after', () => {
    const { writes, write } = recorder();
    const progress = new CoalescedProgress(row, write, 1000);
    progress.report(update(1));
    vi.advanceTimersByTime(0);
    progress.report(update(2));
    progress.flush();
    expect(writes.map((w) => w.progress)).toEqual([1, 2]);
    vi.advanceTimersByTime(2000);
    progress.flush();
    expect(writes).toHaveLength(2);
  });

  it('drops what is not stored once stopped, and reports nothing once the task is no longer active', () => {
    let active = true;
    const { writes, write } = recorder(() => active);
    const progress = new CoalescedProgress(row, write, 1000);
    progress.report(update(1));
    progress.stop();
    vi.advanceTimersByTime(2000);
    expect(writes).toEqual([]);
    active = false;
    progress.report(update(2));
    vi.advanceTimersByTime(0);
    expect(writes).toHaveLength(1);
    expect(progress.report(update(3))).toBeUndefined();
  });
});
