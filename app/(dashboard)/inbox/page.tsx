import Link from 'next/link';
import { Approval } from '@/components/inputs/approval';
import { RelativeTime } from '@/components/ui/relative-time';
import { getRuntime } from '@/lib/runtime';
import { requireUser } from '@/lib/auth/session';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Inbox · MCP Task Server' };

export default async function InboxPage() {
  const user = await requireUser('/inbox');
  const waiting = await getRuntime().engine.inputs.listPendingForUser(user.id);
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold tracking-tight">Inbox</h1>
        <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
          Questions your tasks are waiting on. Answer here or in your MCP client: the first answer wins. Calls that wait for
          your approval are approved or denied only here, never by the client that made them.
        </p>
      </div>
      {waiting.length === 0 ? (
        <p className="rounded-lg border border-dashed border-zinc-300 p-8 text-center text-sm text-zinc-600 dark:border-zinc-700 dark:text-zinc-400">
          No questions waiting. When a task needs a decision, it shows up here.
        </p>
      ) : (
        <ul className="divide-y divide-zinc-200 rounded-lg border border-zinc-200 bg-white shadow-sm dark:divide-zinc-800 dark:border-zinc-800 dark:bg-zinc-900">
          {waiting.map(({ input, task }) =>
            input.kind === 'approval' ? (
              <li key={input.id} className="space-y-3 p-4" data-input-id={input.id}>
                <Approval input={input} />
                <p className="text-xs text-zinc-500 dark:text-zinc-400">
                  <Link href={`/tasks/${task.id}`} prefetch={false} className="text-blue-700 underline dark:text-blue-400">
                    {task.toolName}
                  </Link>{' '}
                  · <span className="font-mono">{task.id.slice(0, 8)}</span> · asked <RelativeTime at={input.createdAt} />
                </p>
              </li>
            ) : (
              <li key={input.id} className="flex flex-wrap items-center justify-between gap-3 p-4" data-input-id={input.id}>
                <div className="min-w-0">
                  <p className="whitespace-pre-wrap text-sm font-medium">
                    {input.kind === 'sampling' ? 'Waiting on the MCP client’s model' : String(input.request.message ?? 'A question')}
                  </p>
                  <p className="mt-1 text-xs text-zinc-500 dark:text-zinc-400">
                    {task.toolName} · <span className="font-mono">{task.id.slice(0, 8)}</span> · asked <RelativeTime at={input.createdAt} />
                  </p>
                </div>
                <Link href={`/tasks/${task.id}`} prefetch={false} className="text-sm font-medium text-blue-700 hover:underline dark:text-blue-400" aria-label={`Answer: ${String(input.request.message ?? 'question')}`}>
                  {input.kind === 'sampling' ? 'View task' : 'Answer'}
                </Link>
              </li>
            ),
          )}
        </ul>
      )}
    </div>
  );
}
