import type { ToolDefinition } from './define';
import { delayTool } from './delay';
import { echoTool } from './echo';

/** Every tool the server offers. To add one, write lib/tools/<name>.ts with defineTool and list it here. */
export const tools: readonly ToolDefinition[] = [delayTool, echoTool] as unknown as ToolDefinition[];

export function findTool(name: string): ToolDefinition | undefined {
  return tools.find((tool) => tool.name === name);
}
