import { getUserById } from '@/db/queries/users';
import { builtInTools } from './built-in';
import type { ToolDefinition } from './define';

/**
 * The one list of tools the engine and both protocol eras read, filled by sources: the built-in tools,
 * and each upstream MCP server of the servers file. Nothing that reads it knows where a tool comes from.
 */
export interface ToolSource {
  /** The tools it offers now (an upstream's change as it reconnects or says its list changed). */
  tools(): readonly ToolDefinition[];
  /** Whether a person (by the email of their account) may see and call its tools; absent: every signed-in person. */
  allows?(email: string | null): boolean;
}

/**
 * On globalThis because npm start's server and Next's route bundles each load their own copy of this
 * module, and the sources the runtime adds must be seen by every copy.
 */
const globalForCatalogue = globalThis as unknown as {
  __mcpTaskServerToolSources?: ToolSource[];
  __mcpTaskServerToolListeners?: Set<() => void>;
};

function sources(): ToolSource[] {
  return (globalForCatalogue.__mcpTaskServerToolSources ??= []);
}

function listeners(): Set<() => void> {
  return (globalForCatalogue.__mcpTaskServerToolListeners ??= new Set());
}

export function addToolSource(source: ToolSource): void {
  sources().push(source);
  toolsChanged();
}

export function removeToolSource(source: ToolSource): void {
  const list = sources();
  const at = list.indexOf(source);
  if (at >= 0) list.splice(at, 1);
  toolsChanged();
}

/** Tells whoever listens (sessions that take notifications/tools/list_changed) that the catalogue changed. */
export function toolsChanged(): void {
  for (const listener of listeners()) listener();
}

export function onToolsChanged(listener: () => void): () => void {
  listeners().add(listener);
  return () => listeners().delete(listener);
}

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
