import type { TaskRow } from '@/lib/tasks/engine';

/**
 * Marks a task the server made of a plain tools/call: its client did not ask for a task and waits on
 * the call itself, so it cannot poll or cancel the task with tasks/*, but the person can here.
 */
export function PlainCallBadge({ task }: { task: Pick<TaskRow, 'invocation' | 'clientName'> }) {
  if (task.invocation !== 'call') return null;
  const from = task.clientName ? ` from ${task.clientName}` : '';
  return (
    <span
      data-testid="plain-call"
      title={`Started by a plain tools/call${from}: the client waits on the call for the result`}
      className="inline-flex items-center whitespace-nowrap rounded-full bg-violet-50 px-2 py-0.5 text-xs font-medium text-violet-800 ring-1 ring-inset ring-violet-600/30 dark:bg-violet-950 dark:text-violet-200"
    >
      Plain call{from}
    </span>
  );
}
