import type { ToolDefinition } from './define';

/**
 * The sources of the catalogue besides the built-in tools (each upstream server of the servers file),
 * and who listens for its changes. On globalThis because npm start's server and Next's route bundles
 * each load their own copy of this module, and the sources the runtime adds must be seen by every copy.
 */
export interface ToolSource {
  /** The tools it offers now (an upstream's change as it reconnects or says its list changed). */
  tools(): readonly ToolDefinition[];
  /** Whether a person (by the email of their account) may see and call its tools; absent: every signed-in person. */
  allows?(email: string | null): boolean;
}

const globalForSources = globalThis as unknown as {
  __mcpTaskServerToolSources?: ToolSource[];
  __mcpTaskServerToolListeners?: Set<() => void>;
};

export function sources(): ToolSource[] {
  return (globalForSources.__mcpTaskServerToolSources ??= []);
}

function listeners(): Set<() => void> {
  return (globalForSources.__mcpTaskServerToolListeners ??= new Set());
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

/** Tells whoever listens (sessions with a stream open, 2026-07-28 subscriptions) that the catalogue changed. */
export function toolsChanged(): void {
  for (const listener of listeners()) listener();
}

export function onToolsChanged(listener: () => void): () => void {
  listeners().add(listener);
  return () => listeners().delete(listener);
}
