import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TaskRow } from '@/db/queries/tasks';
import { CoalescedProgress, ProgressWrites, type ProgressUpdate } from '@/lib/tasks/progress';

const row = { id: 't1', progress: null, progressTotal: null, progressMessage: null, statusMessage: 'Started', lastUpdatedAt: 0 } as unknown as TaskRow;
const update = (progress: number): ProgressUpdate => ({ progress, progressTotal: 10, progressMessage: `step ${progress}` });
const live = (current: TaskRow) => ({ progress: current.progress, statusMessage: current.statusMessage });

/**
 * Progress writes that record each row stored and each batch (one transaction) it came in; the end of
 * a turn of the event loop comes when the test says, after the timers it advanced.
 */
function recorder(active = () => true) {
  const writes: Array<ReturnType<typeof live>> = [];
  const batches: string[][] = [];
  const endsOfTurn: Array<() => void> = [];
  const write = new ProgressWrites(
    (rows) => {
      batches.push(rows.map((current) => current.id));
      return rows.map((current) => (writes.push(live(current)), active()));
    },
    (flush) => endsOfTurn.push(flush),
  );
  const advance = (ms: number) => {
    vi.advanceTimersByTime(ms);
    for (const flush of endsOfTurn.splice(0)) flush();
  };
  return { writes, batches, write, advance };
}

describe('coalesced progress', () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it('stores the first reports once the current turn ends, then at most once per interval, the latest last', () => {
    const { writes, write, advance } = recorder();
    const progress = new CoalescedProgress({ ...row }, write, 1000);
    expect(progress.report(update(1))?.progress).toBe(1);
    expect(progress.report({ statusMessage: 'One' })?.statusMessage).toBe('One');
    expect(writes).toEqual([]);
    advance(0);
    expect(writes).toEqual([{ progress: 1, statusMessage: 'One' }]);
    for (let step = 2; step <= 5; step += 1) {
      advance(100);
      // Every report is returned as the task now stands, stored or not.
      expect(progress.report(update(step))?.progressMessage).toBe(`step ${step}`);
    }
    expect(writes).toHaveLength(1);
    advance(600);
    expect(writes).toEqual([{ progress: 1, statusMessage: 'One' }, { progress: 5, statusMessage: 'One' }]);
    advance(5000);
    expect(writes).toHaveLength(2);
  });

  it('keeps one timer while reports keep coming, stores once per interval on it, and lets it go once they stop', () => {
    const { writes, write, advance } = recorder();
    const progress = new CoalescedProgress({ ...row }, write, 1000);
    const timers = vi.spyOn(globalThis, 'setTimeout');
    for (let step = 1; step <= 20; step += 1) {
      progress.report(update(step));
      advance(500);
    }
    // The first report at once, then the latest of each interval.
    expect(writes.map((w) => w.progress)).toEqual([1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20]);
    expect(timers).toHaveBeenCalledTimes(2);
    advance(3000);
    expect(writes).toHaveLength(11);
    expect(vi.getTimerCount()).toBe(0);
    // After a quiet interval, a report is stored once the turn ends.
    progress.report(update(21));
    advance(0);
    expect(writes.at(-1)?.progress).toBe(21);
    expect(timers).toHaveBeenCalledTimes(3);
  });

  it('stores the latest report at once when flushed, and nothing more after', async () => {
    const { writes, write, advance } = recorder();
    const progress = new CoalescedProgress({ ...row }, write, 1000);
    progress.report(update(1));
    advance(0);
    progress.report(update(2));
    await progress.flush();
    expect(writes.map((w) => w.progress)).toEqual([1, 2]);
    advance(2000);
    await progress.flush();
    expect(writes).toHaveLength(2);
  });

  it('stores what falls due in one turn of the event loop in one batch', async () => {
    const { batches, write, advance } = recorder();
    const tasks = ['a', 'b', 'c'].map((id) => new CoalescedProgress({ ...row, id } as TaskRow, write, 1000));
    for (const progress of tasks) progress.report(update(1));
    advance(0);
    expect(batches).toEqual([['a', 'b', 'c']]);
    for (const progress of tasks) progress.report(update(2));
    await tasks[1].flush();
    advance(1000);
    expect(batches).toEqual([['a', 'b', 'c'], ['b'], ['a', 'c']]);
  });

  it('drops what is not stored once stopped, and reports nothing once the task is no longer active', () => {
    let active = true;
    const { writes, write, advance } = recorder(() => active);
    const progress = new CoalescedProgress({ ...row }, write, 1000);
    progress.report(update(1));
    progress.stop();
    advance(2000);
    expect(writes).toEqual([]);
    active = false;
    progress.report(update(2));
    advance(0);
    expect(writes).toHaveLength(1);
    expect(progress.report(update(3))).toBeUndefined();
  });
});
