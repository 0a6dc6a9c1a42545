import { z } from 'zod';
import { delayTool } from './delay';
import { defineTool, textResult } from './define';

/**
 * Tools that only the tests load (MCP_FIXTURE_TOOLS=1): they let a test see what a real tool does
 * not show, such as the moment its run() ends after a cancellation.
 */
export const observedDelayTool = defineTool({
  name: 'fixture_observed_delay',
  description: 'Runs delay, and writes one line to standard output when that run ends, however it ends.',
  inputSchema: delayTool.inputSchema,
  taskSupport: 'optional',
  async run(args, ctx) {
    let ending = 'returned';
    try {
      return await delayTool.run(args, ctx);
    } catch (error) {
      ending = error instanceof Error ? error.name : 'threw';
      throw error;
    } finally {
      process.stdout.write(`${JSON.stringify({ fixture: 'run-ended', taskId: ctx.taskId, ending, at: Date.now() })}\n`);
    }
  },
});

/** No real tool requires a task; this one does, so that the rule for such tools is tested. */
export const requiresTaskTool = defineTool({
  name: 'fixture_requires_task',
  description: 'Returns at once, and only when called as a task.',
  inputSchema: z.object({}),
  taskSupport: 'required',
  async run() {
    return textResult('Ran as a task.');
  },
});

export const fixtureTools = [observedDelayTool, requiresTaskTool];
