import Link from 'next/link';
import { statusLabel } from '@/components/tasks/status-badge';
import { TaskTable } from '@/components/tasks/task-table';
import { buttonClass } from '@/components/ui/button';
import { inputClass } from '@/components/ui/field';
import { taskStatuses, type TaskStatus } from '@/db/schema';
import { requireUser } from '@/lib/auth/session';
import { getRuntime } from '@/lib/runtime';
import { isTaskError } from '@/lib/tasks/engine';
import { toolsFor } from '@/lib/tools/catalogue';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Tasks · MCP Task Server' };

const pageSize = 25;

function FilterSelect(props: { name: string; label: string; value?: string; all: string; options: Array<{ value: string; label: string }> }) {
  return (
    <div className="space-y-1">
      <label htmlFor={`filter-${props.name}`} className="block text-xs font-medium text-zinc-600 dark:text-zinc-400">
        {props.label}
      </label>
      <select id={`filter-${props.name}`} name={props.name} defaultValue={props.value ?? ''} className={inputClass}>
        <option value="">{props.all}</option>
        {props.options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
    </div>
  );
}
type SearchParams = Record<string, string | string[] | undefined>;
const single = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value)?.trim() || undefined;

export default async function TasksPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const params = await searchParams;
  const user = await requireUser('/tasks');
  const status = taskStatuses.includes(single(params.status) as TaskStatus) ? (single(params.status) as TaskStatus) : undefined;
  const tools = await toolsFor(user.id);
  const toolName = tools.some((tool) => tool.name === single(params.tool)) ? single(params.tool) : undefined;
  const idPrefix = single(params.q);
  const filter = { status, toolName, idPrefix };
  const filtering = Boolean(status || toolName || idPrefix);

  const { engine } = getRuntime();
  let cursorProblem = false;
  let page;
  try {
    page = await engine.listTasks(user.id, single(params.cursor), { pageSize, filter });
  } catch (error) {
    if (!isTaskError(error)) throw error;
    cursorProblem = true;
    page = await engine.listTasks(user.id, undefined, { pageSize, filter });
  }
  const counts = await engine.countByStatus(user.id);
  const total = Object.values(counts).reduce((sum, n) => sum + (n ?? 0), 0);
  const query = (extra: Record<string, string | undefined>) => {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries({ status, tool: toolName, q: idPrefix, ...extra })) if (value) search.set(key, value);
    const text = search.toString();
    return text ? `/tasks?${text}` : '/tasks';
  };

  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-end justify-between gap-4">
        <div>
          <h1 className="text-2xl font-semibold tracking-tight">Tasks</h1>
          <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
            {total} task{total === 1 ? '' : 's'}
            {counts.working ? ` · ${counts.working} working` : ''}
            {counts.input_required ? ` · ${counts.input_required} waiting for input` : ''}
          </p>
        </div>
      </div>

      <form method="get" action="/tasks" role="search" aria-label="Filter tasks" className="flex flex-wrap items-end gap-3">
        <FilterSelect
          name="status"
          label="Status"
          value={status}
          all="All statuses"
          options={taskStatuses.map((value) => ({ value, label: `${statusLabel(value)} (${counts[value] ?? 0})` }))}
        />
        <FilterSelect name="tool" label="Tool" value={toolName} all="All tools" options={tools.map((tool) => ({ value: tool.name, label: tool.name }))} />
        <div className="min-w-48 flex-1 space-y-1">
          <label htmlFor="filter-id" className="block text-xs font-medium text-zinc-600 dark:text-zinc-400">
            Task id
          </label>
          <input id="filter-id" name="q" defaultValue={idPrefix ?? ''} placeholder="Find by id (or its start)" className={`${inputClass} font-mono`} />
        </div>
        <button type="submit" className={buttonClass('secondary')}>
          Apply
        </button>
        {filtering && (
          <Link href="/tasks" className={buttonClass('ghost')}>
            Clear filters
          </Link>
        )}
      </form>

      {cursorProblem && (
        <p role="status" className="rounded-md bg-amber-50 p-3 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-200">
          That page link is not valid any more; showing the newest tasks instead.
        </p>
      )}

      {page.tasks.length > 0 ? (
        <TaskTable tasks={page.tasks} />
      ) : filtering ? (
        <p className="rounded-lg border border-dashed border-zinc-300 p-8 text-center text-sm text-zinc-600 dark:border-zinc-700 dark:text-zinc-400">
          No tasks match these filters.
        </p>
      ) : (
        <div className="rounded-lg border border-dashed border-zinc-300 p-8 text-center dark:border-zinc-700">
          <h2 className="text-base font-semibold">No tasks yet</h2>
          <p className="mx-auto mt-2 max-w-md text-sm text-zinc-600 dark:text-zinc-400">
            Tasks appear here, live, as soon as an MCP client starts one. Create an access token, add this server to your
            client, and call a tool such as <code className="font-mono">delay</code> as a task.
          </p>
          <div className="mt-4 flex justify-center gap-2">
            <Link href="/tokens" className={buttonClass('primary')}>
              Create a token
            </Link>
            <Link href="/connect" className={buttonClass('secondary')}>
              Connect a client
            </Link>
          </div>
        </div>
      )}

      {(params.cursor || page.nextCursor) && (
        <nav aria-label="Pages" className="flex justify-between">
          {params.cursor ? (
            <Link href={query({})} className={buttonClass('secondary')}>
              ← Newest
            </Link>
          ) : (
            <span />
          )}
          {page.nextCursor && (
            <Link href={query({ cursor: page.nextCursor })} className={buttonClass('secondary')}>
              Older →
            </Link>
          )}
        </nav>
      )}
    </div>
  );
}
