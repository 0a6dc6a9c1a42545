import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineTool, textResult } from './define';

const tickMs = 500;
const maxSeconds = 3600;

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
    let waitedMs = Math.min(totalMs, (ctx.resumedFrom?.progress ?? 0) * 1000);
    while (waitedMs < totalMs) {
      const stepMs = Math.min(tickMs, totalMs - waitedMs);
      await sleep(stepMs, undefined, { signal: ctx.signal });
      waitedMs += stepMs;
      const done = waitedMs >= totalMs ? seconds : waitedMs / 1000;
      const shown = Math.round(done * 10) / 10;
      ctx.progress(done, seconds, `Waited ${shown} of ${seconds} s`);
      ctx.status(`Waiting: ${shown} of ${seconds} s done`);
    }
    if (fail) return textResult(`Failed on purpose after waiting ${seconds} s.`, true);
    return textResult(`Waited ${seconds} s.`);
  },
});
