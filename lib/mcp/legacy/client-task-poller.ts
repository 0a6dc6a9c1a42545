import { setTimeout as sleep } from 'node:timers/promises';
import type { TaskEngine } from '@/lib/tasks/engine';
import type { ClientRequests } from './client-requests';

const maxFailures = 5;
const minPollMs = 250;
/** tasks/result blocks until the client's task ends: wait as long as the task may live. */
const resultTimeoutMs = (ttl: unknown) => Math.max(30_000, typeof ttl === 'number' ? ttl : 0);

/** The answeredVia of an answer fetched from the client's own task. */
export const clientTaskVia = (clientTaskId: string) => `client-task:${clientTaskId}`;

/**
 * A client took our question as a task of its own: we are now its requestor. Polls its tasks/get at the
 * pollInterval it suggests and, once it completes or waits for input, fetches the answer with
 * tasks/result. Stops when the question is closed some other way (the withdrawal also cancels the
 * client's task). Its requests go on the stream the question went on, which the client is reading; a
 * client task that cannot be followed is forgotten, and the question asked again.
 */
export async function followClientTask(options: {
  engine: TaskEngine;
  requests: ClientRequests;
  sessionId: string;
  userId: string;
  inputId: string;
  clientTaskId: string;
  /** The stream the question went on (null: the GET stream). */
  stream: string | null;
  pollIntervalMs?: number;
  label: string | null;
}): Promise<void> {
  const { engine, requests, sessionId, inputId, clientTaskId, stream } = options;
  const pace = (ms: number | undefined) => Math.max(minPollMs, ms ?? 1000);
  let interval = pace(options.pollIntervalMs);
  let failures = 0;
  const stillOpen = () => engine.inputs.isPending(inputId);
  while (await stillOpen()) {
    if (failures >= maxFailures) {
      await engine.inputs.forgetClientTask(inputId);
      return;
    }
    await sleep(interval);
    if (!(await stillOpen())) return;
    try {
      const task = await requests.send(sessionId, 'tasks/get', { taskId: clientTaskId }, stream);
      failures = 0;
      if (typeof task.pollInterval === 'number') interval = pace(task.pollInterval);
      // A requestor SHOULD call tasks/result as soon as the task needs input: the client may need that
      // stream to ask its own questions, and the call blocks until the task is done.
      if (task.status === 'completed' || task.status === 'input_required') {
        const result = await requests.send(sessionId, 'tasks/result', { taskId: clientTaskId }, stream, resultTimeoutMs(task.ttl));
        const outcome = await engine.inputs.answer(inputId, options.userId, result, 'client', options.label, clientTaskVia(clientTaskId));
        if (!outcome.ok && outcome.reason === 'invalid') await engine.inputs.forgetClientTask(inputId);
        return;
      }
      // A failed or cancelled client task: the question is asked again like any other (and stays
      // open in the dashboard).
      if (task.status === 'failed' || task.status === 'cancelled') {
        await engine.inputs.forgetClientTask(inputId);
        return;
      }
    } catch {
      failures += 1;
    }
  }
}
