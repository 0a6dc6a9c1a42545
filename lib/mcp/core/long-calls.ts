import { z } from 'zod';
import { defineTool, describeTool, textResult, ToolProtocolError, type CallToolResult, type ToolDefinition, type ToolListing } from '@/lib/tools/define';
import { isTaskError, type TaskEngine, type TaskRow, type TaskStatusRow } from '@/lib/tasks/engine';
import { isTerminal } from '@/lib/tasks/states';
import { taskStatuses } from '@/db/schema';
import { isRpcError } from './errors';
import { runToolNow } from './tool-calls';
import { isoTimestamp } from './timestamps';

/**
 * Calls that outlast their client's own timeout. Most clients have no tasks and give up on a request
 * after a fixed time (60 s in the official SDKs), whatever progress they are sent. So a plain call whose
 * task is still running after the client's answer window is answered at once, in words a model acts on:
 * the work goes on as task <id>, and the tool task_result fetches its result. The tools below are offered
 * to clients without tasks only (a client with tasks has tasks/get and tasks/result); they are plain
 * tools, bound to the person like everything else.
 */

/**
 * The answer window of a client by the clientInfo.name it gave, whatever its case: the window set for
 * that name, or for the longest set name it starts with (bridges add to the name of the client they
 * carry: mcp-remote makes "claude-ai" "claude-ai (via mcp-remote 0.15.1)"), or the default.
 */
export function answerWindowFor(clientName: string | null | undefined, byClient: ReadonlyMap<string, number>, fallbackMs: number): number {
  if (!clientName || byClient.size === 0) return fallbackMs;
  const name = clientName.toLowerCase();
  const exact = byClient.get(name);
  if (exact !== undefined) return exact;
  let longest = '';
  for (const configured of byClient.keys()) if (configured.length > longest.length && name.startsWith(configured)) longest = configured;
  return longest ? byClient.get(longest)! : fallbackMs;
}

/** What a plain call's early answer carries in structuredContent, besides the same words as text. */
export interface StillRunning {
  taskId: string;
  status: 'working' | 'input_required';
  statusMessage?: string;
  pollAfterSeconds: number;
}

/** The answer to a call (or a task_result) whose task has not ended within the window. */
export function stillRunningResult(task: TaskStatusRow, pageUrl: string, windowMs: number): CallToolResult {
  const status = task.status === 'input_required' ? 'input_required' : 'working';
  const structured: StillRunning = {
    taskId: task.id,
    status,
    ...(task.statusMessage ? { statusMessage: task.statusMessage } : {}),
    pollAfterSeconds: Math.max(1, Math.ceil(task.pollIntervalMs / 1000)),
  };
  const now = task.statusMessage ? ` Now: ${task.statusMessage}` : '';
  const asking = status === 'input_required' ? ` It is waiting for an answer, which a person can also give at ${pageUrl}.` : '';
  const text =
    `Still running: the work goes on as task ${task.id} (${status}).${now}${asking} ` +
    `Call the tool task_result with {"taskId": "${task.id}"} to get its result: it waits up to ${Math.round(windowMs / 1000)} s ` +
    'and returns the result, or says again that the task is still running.';
  return { content: [{ type: 'text', text }, { type: 'text', text: JSON.stringify(structured) }], structuredContent: structured as unknown as Record<string, unknown> };
}

const stillRunningSchema = {
  type: 'object',
  properties: {
    taskId: { type: 'string' },
    status: { type: 'string', enum: ['working', 'input_required'] },
    statusMessage: { type: 'string' },
    pollAfterSeconds: { type: 'number' },
  },
  required: ['taskId', 'status', 'pollAfterSeconds'],
};

/**
 * A tool's listing for a client whose plain calls may be answered early: an outputSchema promises the
 * structured content of every result, so it also admits the early answer's. Clients that validate
 * results (the official SDKs do) then accept both.
 */
export function admittingEarlyAnswers(listed: ToolListing): ToolListing {
  if (!listed.outputSchema) return listed;
  let admitting = admittingListings.get(listed);
  if (!admitting) {
    const { $schema: dialect, ...own } = listed.outputSchema as Record<string, unknown>;
    admitting = { ...listed, outputSchema: { ...(dialect !== undefined ? { $schema: dialect } : {}), type: 'object', anyOf: [own, stillRunningSchema] } };
    admittingListings.set(listed, admitting);
  }
  return admitting;
}

const admittingListings = new WeakMap<ToolListing, ToolListing>();

const taskStatusSchema = z.object({
  taskId: z.string(),
  toolName: z.string(),
  status: z.enum(taskStatuses),
  statusMessage: z.string().optional(),
  createdAt: z.string(),
  lastUpdatedAt: z.string(),
});
const taskListInput = z.object({
  status: z.enum(taskStatuses).optional().describe('Only tasks in this status.'),
  limit: z.number().int().min(1).max(50).optional().describe('How many tasks at most (default 20).'),
});
const taskListOutput = z.object({ tasks: z.array(taskStatusSchema) });
const taskIdInput = z.object({ taskId: z.string().min(1).max(200).describe('The task id a call answered with ("Still running: … task <id>").') });
const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** How the tools begin their answer for a task id the person has no task with; the request log counts such lookups against the person. */
export const unknownTaskWords = 'Unknown task: ';

/** How each tool waits for a task's end, as its era does: given the task, the window and the request. */
export type FollowTask = (task: TaskRow, windowMs: number) => Promise<CallToolResult>;

/**
 * The four tools, for one call: `follow` waits for a task as the era's plain call does (carrying its
 * questions and progress on this call where the era can), and answers with the task's result.
 */
export function taskTools(engine: TaskEngine, windowMs: number, follow: FollowTask): ToolDefinition[] {
  const unknown = (taskId: string) => textResult(`${unknownTaskWords}${taskId}. It does not exist, has expired, or is not yours; task_list lists your tasks.`, true);
  return [
    defineTool({
      name: 'task_result',
      title: 'Result of a task',
      description:
        'Returns the result of a task that a tool call answered "still running" for, exactly as that call would have. ' +
        `Waits up to ${Math.round(windowMs / 1000)} s for the task to end; if it is still running then, says so again: call it again. ` +
        'A question the task asks meanwhile is asked on this call.',
      inputSchema: taskIdInput,
      annotations: readOnly,
      taskSupport: 'forbidden',
      async run({ taskId }, ctx) {
        const task = await taskOf(engine, taskId, ctx.userId);
        if (!task) return unknown(taskId);
        try {
          return await follow(task, windowMs);
        } catch (error) {
          // The task's own JSON-RPC error is what the call would have answered: returned verbatim.
          if (isRpcError(error)) throw new ToolProtocolError(error.code, error.message, error.data);
          throw error;
        }
      },
    }),
    defineTool({
      name: 'task_status',
      title: 'Status of a task',
      description: 'Says what a task is doing now: its status (working, input_required, completed, failed, cancelled) and its latest message.',
      inputSchema: taskIdInput,
      outputSchema: taskStatusSchema,
      annotations: readOnly,
      taskSupport: 'forbidden',
      async run({ taskId }, ctx) {
        const task = await taskOf(engine, taskId, ctx.userId);
        if (!task) return unknown(taskId);
        const status = statusOf(task);
        const next = isTerminal(task.status) ? 'Call task_result for its result.' : 'It is still running; task_result waits for its result.';
        return { content: [{ type: 'text', text: `Task ${task.id} (${task.toolName}) is ${task.status}.${task.statusMessage ? ` ${task.statusMessage}` : ''} ${next}` }], structuredContent: status };
      },
    }),
    defineTool({
      name: 'task_cancel',
      title: 'Cancel a task',
      description: 'Cancels a task that is still running. A task that has ended cannot be cancelled.',
      inputSchema: taskIdInput,
      outputSchema: taskStatusSchema,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      taskSupport: 'forbidden',
      async run({ taskId }, ctx) {
        const task = await taskOf(engine, taskId, ctx.userId);
        if (!task) return unknown(taskId);
        let cancelled: TaskRow;
        try {
          cancelled = task.status === 'cancelled' ? task : await engine.cancelTask(task.id, ctx.userId, 'client');
        } catch (error) {
          if (isTaskError(error) && error.reason === 'terminal') return textResult(`Task ${task.id} has already ended (${error.status ?? 'terminal'}); it cannot be cancelled.`, true);
          if (isTaskError(error)) return unknown(taskId);
          throw error;
        }
        return { content: [{ type: 'text', text: `Task ${cancelled.id} is cancelled.` }], structuredContent: statusOf(cancelled) };
      },
    }),
    defineTool({
      name: 'task_list',
      title: 'Your tasks',
      description: 'Lists your most recent tasks, newest first, with their status: to find a task whose id was lost.',
      inputSchema: taskListInput,
      outputSchema: taskListOutput,
      annotations: readOnly,
      taskSupport: 'forbidden',
      async run({ status, limit }, ctx) {
        const { tasks } = await engine.listTasks(ctx.userId, undefined, { pageSize: limit ?? 20, filter: status ? { status } : undefined });
        const listed = tasks.map(statusOf);
        const lines = listed.map((task) => `- ${task.taskId} ${task.toolName} ${task.status}${task.statusMessage ? `: ${task.statusMessage}` : ''}`);
        return { content: [{ type: 'text', text: listed.length > 0 ? `Your tasks, newest first:\n${lines.join('\n')}` : 'You have no tasks.' }], structuredContent: { tasks: listed } };
      },
    }),
  ] as ToolDefinition[];
}

function statusOf(task: Pick<TaskRow, 'id' | 'toolName' | 'status' | 'statusMessage' | 'createdAt' | 'lastUpdatedAt'>): z.infer<typeof taskStatusSchema> {
  return {
    taskId: task.id,
    toolName: task.toolName,
    status: task.status,
    ...(task.statusMessage ? { statusMessage: task.statusMessage } : {}),
    createdAt: isoTimestamp(task.createdAt),
    lastUpdatedAt: isoTimestamp(task.lastUpdatedAt),
  };
}

/** The person's task, or undefined for one that does not exist or is someone else's: the same answer, so ids cannot be probed. */
async function taskOf(engine: TaskEngine, taskId: string, userId: string): Promise<TaskRow | undefined> {
  try {
    return await engine.getTask(taskId, userId);
  } catch (error) {
    if (isTaskError(error)) return undefined;
    throw error;
  }
}

/**
 * Runs one of the tools for a call, as a tool that never becomes a task: `follow` is how the caller's era
 * waits for a task, `call` what runToolNow needs of the request.
 */
export function runTaskTool(
  name: string,
  args: Record<string, unknown>,
  use: { engine: TaskEngine; windowMs: number; follow: FollowTask },
  call: Parameters<typeof runToolNow>[2],
): Promise<Record<string, unknown>> {
  const tool = taskTools(use.engine, use.windowMs, use.follow).find((candidate) => candidate.name === name)!;
  return runToolNow(tool, args, call);
}

/** The names of the tools above: a listing for a client with tasks leaves them out, a call finds them first. */
export const taskToolNames = new Set(['task_result', 'task_status', 'task_cancel', 'task_list']);

const listings = new Map<number, ToolListing[]>();

/** Their listing: the same for every call with this window, which only changes words (nothing runs them here). */
export function describeTaskTools(windowMs: number) {
  let listing = listings.get(windowMs);
  if (!listing) {
    const notRun: FollowTask = async () => textResult('');
    listing = taskTools(undefined as unknown as TaskEngine, windowMs, notRun).map((tool) => describeTool(tool, false));
    listings.set(windowMs, listing);
  }
  return listing;
}
