import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { delayTool } from '@/lib/tools/delay';
import type { ToolContext } from '@/lib/tools/define';

/** A tool context that records what the delay tool reports, and when (ms since the run started). */
function recordingContext(signal: AbortSignal, resumedFrom?: ToolContext['resumedFrom']) {
  const started = performance.now();
  const reports: Array<{ at: number; done: number; total?: number; message?: string; status?: string }> = [];
  const ctx = {
    signal,
    userId: 'u1',
    resumedFrom,
    progress: (done: number, total?: number, message?: string) => reports.push({ at: performance.now() - started, done, total, message }),
    status: (message: string) => (reports.at(-1)!.status = message),
  } as unknown as ToolContext;
  return { ctx, reports };
}

describe('the delay tool', () => {
  it('reports every half second, the last step shorter, and holds one abort listener for the whole wait', async () => {
    const controller = new AbortController();
    const { ctx, reports } = recordingContext(controller.signal);
    const run = delayTool.run({ seconds: 1.2 }, ctx);
    const first = getEventListeners(controller.signal, 'abort');
    expect(first).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 750));
    // The same listener after a tick: nothing is made anew per tick.
    expect(getEventListeners(controller.signal, 'abort')).toEqual(first);
    const result = await run;
    expect(result).toEqual({ content: [{ type: 'text', text: 'Waited 1.2 s.' }] });
    expect(reports.map(({ done, total, message, status }) => ({ done, total, message, status }))).toEqual([
      { done: 0.5, total: 1.2, message: 'Waited 0.5 of 1.2 s', status: 'Waiting: 0.5 of 1.2 s done' },
      { done: 1, total: 1.2, message: 'Waited 1 of 1.2 s', status: 'Waiting: 1 of 1.2 s done' },
      { done: 1.2, total: 1.2, message: 'Waited 1.2 of 1.2 s', status: 'Waiting: 1.2 of 1.2 s done' },
    ]);
    // Each report comes when its step is over, not before (timers may fire a little late, never early).
    expect(reports[0].at).toBeGreaterThanOrEqual(499);
    expect(reports[1].at).toBeGreaterThanOrEqual(999);
    expect(reports[2].at).toBeGreaterThanOrEqual(1199);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('carries on from the progress reported before a restart', async () => {
    const { ctx, reports } = recordingContext(new AbortController().signal, { progress: 0.5 });
    await delayTool.run({ seconds: 1.1 }, ctx);
    expect(reports.map((report) => report.done)).toEqual([1, 1.1]);
    expect(reports[1].at).toBeGreaterThanOrEqual(599);
    expect(reports[1].at).toBeLessThan(1000);
  });

  it('returns at once for no time, and ends with an error result when asked to fail', async () => {
    const { ctx, reports } = recordingContext(new AbortController().signal);
    expect(await delayTool.run({ seconds: 0, fail: true }, ctx)).toEqual({ content: [{ type: 'text', text: 'Failed on purpose after waiting 0 s.' }], isError: true });
    expect(reports).toEqual([]);
  });

  it('stops with an AbortError when its signal aborts, reports nothing more and leaves no timer or listener', async () => {
    const controller = new AbortController();
    const { ctx, reports } = recordingContext(controller.signal);
    const run = delayTool.run({ seconds: 2 }, ctx);
    setTimeout(() => controller.abort(new Error('Task cancelled')), 700);
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(reports.map((report) => report.done)).toEqual([0.5]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(reports).toHaveLength(1);
  });

  it('does not start on a signal that has already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const { ctx, reports } = recordingContext(controller.signal);
    await expect(delayTool.run({ seconds: 1 }, ctx)).rejects.toMatchObject({ name: 'AbortError' });
    expect(reports).toEqual([]);
  });
});
