import type { TaskEventRow } from '@/lib/tasks/engine';
import { RelativeTime } from '@/components/ui/relative-time';
import { StatusBadge } from './status-badge';

const actorLabel: Record<string, string> = { client: 'MCP client', dashboard: 'Dashboard', system: 'Server' };

export function Timeline({ events }: { events: TaskEventRow[] }) {
  return (
    <ol className="space-y-4" aria-label="Timeline">
      {events.map((event) => (
        <li key={event.id} className="relative border-l-2 border-zinc-200 pl-4 dark:border-zinc-700">
          <div className="flex flex-wrap items-center gap-2">
            <StatusBadge status={event.toStatus} />
            <span className="text-xs text-zinc-500 dark:text-zinc-400">
              <RelativeTime at={event.at} /> · {actorLabel[event.actor] ?? event.actor}
            </span>
          </div>
          {event.statusMessage && <p className="mt-1 text-sm text-zinc-700 dark:text-zinc-300">{event.statusMessage}</p>}
        </li>
      ))}
    </ol>
  );
}
