import { getUserById } from '@/db/queries/users';
import { builtInTools } from './built-in';
import type { ToolDefinition } from './define';
import { sources } from './sources';

export { addToolSource, onToolsChanged, removeToolSource, toolsChanged, type ToolSource } from './sources';

/**
 * The one list of tools the engine and both protocol eras read, filled by sources: the built-in tools,
 * and each upstream MCP server of the servers file (lib/tools/sources.ts). Nothing that reads it knows
 * where a tool comes from.
 */

/** Every tool, whoever may use it: for the engine, which runs a task of its owner's tool. */
export function allTools(): ToolDefinition[] {
  const all = [...builtInTools];
  for (const source of sources()) all.push(...source.tools());
  return all;
}

export function findTool(name: string): ToolDefinition | undefined {
  return builtInTools.find((tool) => tool.name === name) ?? sources().flatMap((source) => source.tools()).find((tool) => tool.name === name);
}

/** Whether two people may see different lists: some source admits only some people. */
export function catalogueVariesByUser(): boolean {
  return sources().some((source) => source.allows !== undefined);
}

/** The tools this person may see and call. */
export async function toolsFor(userId: string): Promise<ToolDefinition[]> {
  if (!catalogueVariesByUser()) return allTools();
  const email = await emailOf(userId);
  const visible = [...builtInTools];
  for (const source of sources()) if (!source.allows || source.allows(email)) visible.push(...source.tools());
  return visible;
}

/** The tool of this name if this person may call it; a tool of a source they may not use is unknown to them. */
export async function findToolFor(name: string, userId: string): Promise<ToolDefinition | undefined> {
  const builtIn = builtInTools.find((tool) => tool.name === name);
  if (builtIn) return builtIn;
  for (const source of sources()) {
    const tool = source.tools().find((candidate) => candidate.name === name);
    if (!tool) continue;
    if (source.allows && !source.allows(await emailOf(userId))) return undefined;
    return tool;
  }
  return undefined;
}

async function emailOf(userId: string): Promise<string | null> {
  return (await getUserById(userId))?.email ?? null;
}
