import { setTimeout as sleep } from 'node:timers/promises';
import type { TaskEngine } from '@/lib/tasks/engine';
import type { ClientRequests } from './client-requests';

const maxFailures = 5;

/**
 * A client took our question as a task of its own: we are now its requestor. Polls its tasks/get at the
 * pollInterval it suggests and, once it completes, fetches the answer with tasks/result. Stops when the
 * question is closed some other way (the withdrawal also cancels the client's task).
 */
export async function followClientTask(options: {
  engine: TaskEngine;
  requests: ClientRequests;
  sessionId: string;
  userId: string;
  inputId: string;
  clientTaskId: string;
  pollIntervalMs?: number;
  via: string;
  label: string | null;
}): Promise<void> {
  const { engine, requests, sessionId, inputId, clientTaskId } = options;
  let interval = options.pollIntervalMs ?? 1000;
  let failures = 0;
  const stillOpen = () => engine.inputs.isPending(inputId);
  while (stillOpen() && failures < maxFailures) {
    await sleep(interval);
    if (!stillOpen()) return;
    try {
      const task = await requests.send(sessionId, 'tasks/get', { taskId: clientTaskId });
      failures = 0;
      if (typeof task.pollInterval === 'number' && task.pollInterval > 0) interval = task.pollInterval;
      if (task.status === 'completed') {
        const result = await requests.send(sessionId, 'tasks/result', { taskId: clientTaskId });
        engine.inputs.answer(inputId, options.userId, result, 'client', options.label, options.via);
        return;
      }
      // A failed or cancelled client task leaves the question open for the dashboard.
      if (task.status === 'failed' || task.status === 'cancelled') return;
    } catch {
      failures += 1;
    }
  }
}
