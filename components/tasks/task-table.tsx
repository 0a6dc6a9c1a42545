import Link from 'next/link';
import type { TaskListRow } from '@/lib/tasks/engine';
import { RelativeTime } from '@/components/ui/relative-time';
import { EraBadge } from './era-badge';
import { PlainCallBadge } from './plain-call-badge';
import { ProgressBar } from './progress-bar';
import { StatusBadge } from './status-badge';

export function TaskTable({ tasks }: { tasks: TaskListRow[] }) {
  return (
    <div className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
      <table className="w-full text-left text-sm">
        <caption className="sr-only">Your tasks, newest first</caption>
        <thead className="border-b border-zinc-200 bg-zinc-50 text-xs uppercase tracking-wide text-zinc-500 dark:border-zinc-800 dark:bg-zinc-900 dark:text-zinc-400">
          <tr>
            <th scope="col" className="px-4 py-3 font-medium">Status</th>
            <th scope="col" className="px-4 py-3 font-medium">Task</th>
            <th scope="col" className="hidden px-4 py-3 font-medium md:table-cell">Message</th>
            <th scope="col" className="px-4 py-3 font-medium">Progress</th>
            <th scope="col" className="hidden px-4 py-3 font-medium sm:table-cell">Created</th>
            <th scope="col" className="hidden px-4 py-3 font-medium lg:table-cell">Updated</th>
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {tasks.map((task) => (
            <tr key={task.id} data-task-id={task.id} className="hover:bg-zinc-50 dark:hover:bg-zinc-800/50">
              <td className="px-4 py-3">
                <StatusBadge status={task.status} />
              </td>
              <td className="px-4 py-3">
                <Link href={`/tasks/${task.id}`} prefetch={false} className="font-medium text-blue-700 hover:underline dark:text-blue-400" aria-label={`${task.toolName}: open task ${task.id}`}>
                  {task.toolName}
                </Link>
                <div className="flex flex-wrap items-center gap-2">
                  <span className="font-mono text-xs text-zinc-500 dark:text-zinc-400">{task.id.slice(0, 8)}</span>
                  <PlainCallBadge task={task} />
                  <EraBadge task={task} />
                </div>
              </td>
              <td className="hidden max-w-xs truncate px-4 py-3 text-zinc-600 md:table-cell dark:text-zinc-300" title={task.statusMessage ?? undefined}>
                {task.statusMessage}
              </td>
              <td className="px-4 py-3">
                <ProgressBar progress={task.progress} total={task.progressTotal} label={`Progress of task ${task.id.slice(0, 8)}`} />
              </td>
              <td className="hidden whitespace-nowrap px-4 py-3 text-zinc-600 sm:table-cell dark:text-zinc-400">
                <RelativeTime at={task.createdAt} />
              </td>
              <td className="hidden whitespace-nowrap px-4 py-3 text-zinc-600 lg:table-cell dark:text-zinc-400">
                <RelativeTime at={task.lastUpdatedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
