import { z } from 'zod';
import { defineTool, textResult } from './define';

const tickMs = 500;
const maxSeconds = 3600;

/**
 * Calls `tick` with the time waited so far, and whether the wait is over, every `intervalMs` (the last
 * step shorter when `totalMs` is not a multiple) until `totalMs` has passed; rejects with an AbortError once `signal` aborts. One timer,
 * re-armed, and one abort listener serve the whole wait, so a tick allocates nothing but what `tick`
 * does: a promise, a timer and a listener made per tick and kept until the next one outlive V8's young
 * collections, and ten thousand waiting tasks would fill the old generation with them.
 */
function waitInTicks(totalMs: number, intervalMs: number, signal: AbortSignal, tick: (waitedMs: number, last: boolean) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = () => new DOMException('The operation was aborted', 'AbortError');
    if (signal.aborted) return reject(aborted());
    let waitedMs = 0;
    let stepMs = Math.min(intervalMs, totalMs);
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted());
    };
    const settle = (error?: unknown) => {
      signal.removeEventListener('abort', onAbort);
      if (error === undefined) resolve();
      else reject(error);
    };
    const fire = () => {
      waitedMs += stepMs;
      const last = waitedMs >= totalMs;
      try {
        tick(waitedMs, last);
      } catch (error) {
        return settle(error);
      }
      if (last) return settle();
      const nextMs = Math.min(intervalMs, totalMs - waitedMs);
      if (nextMs === stepMs) {
        timer.refresh();
        return;
      }
      stepMs = nextMs;
      timer = setTimeout(fire, stepMs);
    };
    let timer = setTimeout(fire, stepMs);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export const delayTool = defineTool({
  name: 'delay',
  title: 'Delay',
  description:
    'Waits the given number of seconds, reporting progress about twice a second, then returns. ' +
    'Set fail to true to end with an error result instead.',
  inputSchema: z.object({
    seconds: z.number().min(0).max(maxSeconds).describe(`How long to wait, in seconds (0 to ${maxSeconds}).`),
    fail: z.boolean().optional().describe('End with an error result instead of success.'),
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  taskSupport: 'optional',
  maxRunMs: maxSeconds * 1000,
  resumable: true,
  async run({ seconds, fail }, ctx) {
    const totalMs = seconds * 1000;
    // After a restart, carry on from the progress already reported rather than waiting the whole time again.
    const resumedMs = Math.min(totalMs, (ctx.resumedFrom?.progress ?? 0) * 1000);
    if (resumedMs < totalMs) {
      await waitInTicks(totalMs - resumedMs, tickMs, ctx.signal, (waitedMs, last) => {
        const done = last ? seconds : (resumedMs + waitedMs) / 1000;
        const shown = Math.round(done * 10) / 10;
        ctx.progress(done, seconds, `Waited ${shown} of ${seconds} s`);
        ctx.status(`Waiting: ${shown} of ${seconds} s done`);
      });
    }
    if (fail) return textResult(`Failed on purpose after waiting ${seconds} s.`, true);
    return textResult(`Waited ${seconds} s.`);
  },
});
