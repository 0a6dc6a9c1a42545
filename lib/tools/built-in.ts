import { askHumanTool } from './ask-human';
import type { ToolDefinition } from './define';
import { delayTool } from './delay';
import { echoTool } from './echo';
import { fixtureTools } from './fixtures';
import { modernFixtureTools } from './fixtures-modern';
import { summarizeTool } from './summarize';
import { surveyTool } from './survey';

/**
 * The server's own tools, the first source of the catalogue (lib/tools/catalogue.ts). To add one, write
 * lib/tools/<name>.ts with defineTool and list it here.
 */
export const builtInTools: readonly ToolDefinition[] = [
  delayTool,
  echoTool,
  askHumanTool,
  surveyTool,
  summarizeTool,
  // Read at start, not at build: only a test server sets it.
  ...(process.env.MCP_FIXTURE_TOOLS === '1' ? [...fixtureTools, ...modernFixtureTools] : []),
] as unknown as ToolDefinition[];

