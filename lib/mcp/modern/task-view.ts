import type { TaskRow } from '@/lib/tasks/engine';
import type { TaskInputRow } from '@/lib/tasks/inputs';
import { linkToAnswer } from '../core/elicitation-modes';
import { isoTimestamp } from '../core/timestamps';
import { canBeAsked, receivesLink, type ModernClient } from './protocol';

/**
 * A stored task as the 2026-07-28 era reads it. One row serves both eras; the mapping is done here,
 * when reading, never by storing a second copy:
 * - `ttl`/`pollInterval` are `ttlMs`/`pollIntervalMs`;
 * - a tool result with `isError: true` is stored `failed` (as 2025-11-25 wants) and read `completed`,
 *   with the result inline: in this era `failed` means a JSON-RPC error, inline as `error`;
 * - a task waiting for input lists its open questions as `inputRequests`, keyed by the key the tool
 *   gave each question, unique over the task's life.
 */

export type ModernStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

export function modernStatusOf(row: Pick<TaskRow, 'status' | 'result' | 'error'>): ModernStatus {
  if (row.status === 'failed' && row.result && !row.error) return 'completed';
  return row.status;
}

/** The flat Task fields (and what CreateTaskResult carries). */
export function toModernTask(row: TaskRow) {
  return {
    taskId: row.id,
    status: modernStatusOf(row),
    ...(row.statusMessage !== null ? { statusMessage: row.statusMessage } : {}),
    createdAt: isoTimestamp(row.createdAt),
    lastUpdatedAt: isoTimestamp(row.lastUpdatedAt),
    ttlMs: row.ttlMs,
    pollIntervalMs: row.pollIntervalMs,
  };
}

/**
 * The open questions this client can be sent, as MRTR input requests keyed by the question's key: as
 * asked, or (a client that takes only URL-mode elicitation) as a link to the task's page. `linksAccepted`
 * names the keys whose link the client accepted already: its person is on the page, and is not sent it again.
 */
export function inputRequestsFor(
  inputs: readonly TaskInputRow[],
  client: ModernClient,
  taskPageUrl: string,
  linksAccepted: ReadonlySet<string> = new Set(),
): Record<string, { method: string; params: Record<string, unknown> }> {
  const requests: Record<string, { method: string; params: Record<string, unknown> }> = {};
  for (const input of inputs) {
    // An approval waits for a person in the dashboard: the client whose call it holds is never asked it.
    if (input.status !== 'pending' || input.clientTaskId || input.kind === 'approval') continue;
    if (receivesLink(client, input.kind)) {
      if (!linksAccepted.has(input.key)) requests[input.key] = { method: 'elicitation/create', params: linkToAnswer(input, taskPageUrl, false) };
      continue;
    }
    if (!canBeAsked(client, input.kind)) continue;
    const { _meta: _ignored, ...params } = input.request as Record<string, unknown>;
    requests[input.key] =
      input.kind === 'sampling' ? { method: 'sampling/createMessage', params } : { method: 'elicitation/create', params: { mode: 'form', ...params } };
  }
  return requests;
}

/**
 * The DetailedTask of tasks/get and notifications/tasks: the task with what its status carries inline
 * (its open questions, its result, or its JSON-RPC error).
 */
export function toDetailedTask(row: TaskRow, inputs: readonly TaskInputRow[], client: ModernClient, taskPageUrl: string): Record<string, unknown> {
  const task = toModernTask(row);
  switch (task.status) {
    case 'input_required':
      return { ...task, inputRequests: inputRequestsFor(inputs, client, taskPageUrl) };
    case 'completed':
      // Exactly what the tools/call would have returned in this era: with its resultType.
      return { ...task, result: { ...(row.result ?? { content: [] }), resultType: 'complete' } };
    case 'failed':
      return { ...task, error: row.error ?? { code: -32603, message: row.statusMessage ?? 'The task failed' } };
    default:
      return task;
  }
}
