import type { ModernMethod } from './call';
import { allProtocolVersions, tasksExtension } from './protocol';

/** What this server offers a 2026-07-28 client: tools, per-request log levels, and the tasks extension. */
export function modernCapabilities() {
  return {
    tools: { listChanged: true },
    logging: {},
    extensions: { [tasksExtension]: {} },
  };
}

export const modernInstructions =
  'Tools that run long run as durable tasks that the person who owns them can watch, answer and cancel in the dashboard. ' +
  `A request that declares the ${tasksExtension} extension gets the task at once and polls tasks/get; any other request ` +
  'waits for the result, and is answered with input_required (the questions, and a requestState to retry with) when the task needs input or takes longer.';

/** The same for every caller: a shared cache may keep it for an hour. */
const discoverTtlMs = 60 * 60 * 1000;

export const discover: ModernMethod = async () => ({
  supportedVersions: allProtocolVersions,
  capabilities: modernCapabilities(),
  instructions: modernInstructions,
  ttlMs: discoverTtlMs,
  cacheScope: 'public',
});
