import { delayTool } from './delay';
import { defineTool } from './define';

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

export const fixtureTools = [observedDelayTool];
