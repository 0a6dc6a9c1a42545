import Link from 'next/link';
import { notFound } from 'next/navigation';
import { CancelTaskButton } from '@/components/tasks/cancel-task-button';
import { QuestionList } from '@/components/inputs/question-list';
import { eraDescription, EraBadge, isModernVersion } from '@/components/tasks/era-badge';
import { PlainCallBadge } from '@/components/tasks/plain-call-badge';
import { ProgressBar } from '@/components/tasks/progress-bar';
import { JsonBlock, ResultView } from '@/components/tasks/result-view';
import { StatusBadge } from '@/components/tasks/status-badge';
import { Timeline } from '@/components/tasks/timeline';
import { ViaServerBadge } from '@/components/tasks/via-server-badge';
import { Card } from '@/components/ui/card';
import { RelativeTime } from '@/components/ui/relative-time';
import { requireUser } from '@/lib/auth/session';
import { getRuntime } from '@/lib/runtime';
import { isTaskError } from '@/lib/tasks/engine';
import { isTerminal } from '@/lib/tasks/states';
import { serverOfTool } from '@/lib/upstreams';

export const dynamic = 'force-dynamic';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function loadTask(taskId: string, userId: string) {
  if (!uuidPattern.test(taskId)) notFound();
  const { engine } = getRuntime();
  try {
    const task = await engine.getTask(taskId, userId);
    return { task, events: await engine.getTimeline(taskId, userId), inputs: await engine.inputs.listForTask(taskId) };
  } catch (error) {
    // Unknown, expired and other users' tasks all look the same from here.
    if (isTaskError(error)) notFound();
    throw error;
  }
}

export async function generateMetadata({ params }: { params: Promise<{ taskId: string }> }) {
  const { taskId } = await params;
  return { title: `Task ${taskId.slice(0, 8)} · MCP Task Server` };
}

export default async function TaskPage({ params }: { params: Promise<{ taskId: string }> }) {
  const { taskId } = await params;
  const user = await requireUser(`/tasks/${encodeURIComponent(taskId)}`);
  const { task, events, inputs } = await loadTask(taskId, user.id);
  const terminal = isTerminal(task.status);
  const hours = task.ttlMs / 3_600_000;
  const server = serverOfTool(task.toolName);

  return (
    <div className="space-y-6">
      <nav aria-label="Breadcrumb" className="text-sm">
        <Link href="/tasks" className="text-blue-700 hover:underline dark:text-blue-400">
          ← All tasks
        </Link>
      </nav>
      <div className="flex flex-wrap items-start justify-between gap-4">
        <div className="min-w-0">
          <div className="flex flex-wrap items-center gap-3">
            <h1 className="text-2xl font-semibold tracking-tight">{task.toolName}</h1>
            <StatusBadge status={task.status} />
            <PlainCallBadge task={task} />
            <EraBadge task={task} />
            <ViaServerBadge server={server} />
          </div>
          <p className="mt-1 break-all font-mono text-xs text-zinc-500 dark:text-zinc-400">{task.id}</p>
          {task.statusMessage && (
            <p className="mt-3 text-sm text-zinc-700 dark:text-zinc-300" data-testid="status-message">
              {task.statusMessage}
            </p>
          )}
        </div>
        <div className="flex flex-col items-end gap-3">
          {!terminal && <CancelTaskButton taskId={task.id} />}
        </div>
      </div>

      <div className="grid gap-6 lg:grid-cols-3">
        <div className="space-y-6 lg:col-span-2">
          {inputs.length > 0 && (
            <Card title={inputs.some((input) => input.status === 'pending') ? 'Waiting for you' : 'Questions'}>
              <QuestionList inputs={inputs} />
            </Card>
          )}
          {task.progress !== null && (
            <Card title="Progress">
              <ProgressBar progress={task.progress} total={task.progressTotal} label="Task progress" />
              {task.progressMessage && <p className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">{task.progressMessage}</p>}
            </Card>
          )}
          {task.partialOutput && (
            <Card title={terminal ? 'Output' : 'Output so far'}>
              <pre
                tabIndex={0}
                role="region"
                aria-label="Partial output"
                data-testid="partial-output"
                className="max-h-96 overflow-auto rounded-md bg-zinc-950 p-3 font-mono text-xs leading-relaxed whitespace-pre-wrap text-zinc-100"
              >
                {task.partialOutput}
              </pre>
            </Card>
          )}
          <Card title="Result">
            {terminal || task.result ? (
              <ResultView result={task.result} error={task.status === 'cancelled' && !task.result ? null : task.error} />
            ) : (
              <p className="text-sm text-zinc-500 dark:text-zinc-400">The result appears here when the task ends.</p>
            )}
            {task.status === 'cancelled' && !task.result && <p className="text-sm text-zinc-600 dark:text-zinc-400">The task was cancelled before it produced a result.</p>}
          </Card>
          <Card title="Arguments">
            <JsonBlock value={task.arguments} />
          </Card>
        </div>
        <div className="space-y-6">
          <Card title="Details">
            <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-2 text-sm">
              <dt className="text-zinc-500 dark:text-zinc-400">Created</dt>
              <dd>
                <RelativeTime at={task.createdAt} />
              </dd>
              <dt className="text-zinc-500 dark:text-zinc-400">Updated</dt>
              <dd>
                <RelativeTime at={task.lastUpdatedAt} />
              </dd>
              <dt className="text-zinc-500 dark:text-zinc-400">Time to live</dt>
              <dd>{hours >= 1 ? `${Number(hours.toFixed(1))} h` : `${Math.round(task.ttlMs / 60_000)} min`}</dd>
              <dt className="text-zinc-500 dark:text-zinc-400">Deleted</dt>
              <dd>
                <RelativeTime at={task.expiresAt} />
              </dd>
              <dt className="text-zinc-500 dark:text-zinc-400">Client</dt>
              <dd>{task.clientName ? `${task.clientName}${task.clientVersion ? ` ${task.clientVersion}` : ''}` : 'Unknown'}</dd>
              <dt className="text-zinc-500 dark:text-zinc-400">Protocol</dt>
              <dd data-testid="protocol">{eraDescription(task.protocolVersion)}</dd>
              <dt className="text-zinc-500 dark:text-zinc-400">Started by</dt>
              <dd data-testid="started-by">{startedBy(task)}</dd>
              {task.upstreamTaskId && (
                <>
                  <dt className="text-zinc-500 dark:text-zinc-400">{server ? `Task id on ${server}` : 'Upstream task id'}</dt>
                  <dd className="break-all font-mono text-xs" data-testid="upstream-task-id">
                    {task.upstreamTaskId}
                  </dd>
                </>
              )}
              {task.attempt > 1 && (
                <>
                  <dt className="text-zinc-500 dark:text-zinc-400">Runs</dt>
                  <dd>{task.attempt} (resumed after a restart)</dd>
                </>
              )}
            </dl>
          </Card>
          <Card title="Timeline">
            <Timeline events={events} />
          </Card>
        </div>
      </div>
    </div>
  );
}

/** How the task's client started it, and how it learns the outcome. */
function startedBy(task: { invocation: string; protocolVersion: string | null }): string {
  const modern = isModernVersion(task.protocolVersion);
  if (task.invocation === 'call') {
    return modern
      ? 'A plain tools/call: the client waits on the call, and retries it with its answers (multi round-trip) while the task needs input'
      : 'A plain tools/call: the client waits on the call for the result';
  }
  return modern
    ? 'A tools/call of a client with the tasks extension: it polls tasks/get and answers with tasks/update'
    : 'A task-augmented tools/call: the client polls for the result';
}
