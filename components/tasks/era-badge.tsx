import type { TaskListRow } from '@/lib/tasks/engine';

/** The first protocol revision of the stateless era (no session, requests carry their version). */
const firstModernVersion = '2026-07-28';

export function isModernVersion(protocolVersion: string | null): boolean {
  return protocolVersion !== null && protocolVersion >= firstModernVersion;
}

/** How the task's client speaks MCP, in a person's words. */
export function eraDescription(protocolVersion: string | null): string {
  if (protocolVersion === null) return 'Unknown protocol revision (recorded for tasks created since both eras are served)';
  return isModernVersion(protocolVersion)
    ? `MCP ${protocolVersion}: stateless, every request on its own`
    : `MCP ${protocolVersion}: a session opened with initialize`;
}

/**
 * The protocol revision the task's client spoke: tasks of both eras are kept, listed and answered alike,
 * and this tells them apart at a glance.
 */
export function EraBadge({ task }: { task: Pick<TaskListRow, 'protocolVersion'> }) {
  if (task.protocolVersion === null) return null;
  const modern = isModernVersion(task.protocolVersion);
  return (
    <span
      data-testid="protocol-era"
      title={eraDescription(task.protocolVersion)}
      className={
        modern
          ? 'inline-flex items-center whitespace-nowrap rounded-full bg-teal-50 px-2 py-0.5 text-xs font-medium text-teal-800 ring-1 ring-inset ring-teal-600/30 dark:bg-teal-950 dark:text-teal-200'
          : 'inline-flex items-center whitespace-nowrap rounded-full bg-zinc-100 px-2 py-0.5 text-xs font-medium text-zinc-700 ring-1 ring-inset ring-zinc-500/20 dark:bg-zinc-800 dark:text-zinc-300'
      }
    >
      MCP {task.protocolVersion}
    </span>
  );
}
