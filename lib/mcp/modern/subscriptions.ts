import { z } from 'zod';
import { topics } from '@/lib/tasks/bus';
import { isTaskError } from '@/lib/tasks/engine';
import { isTerminal, type TaskStatus } from '@/lib/tasks/states';
import { onToolsChanged } from '@/lib/tools/catalogue';
import { parseParams } from '../core/schema';
import type { SseStream } from '../http/sse';
import type { ModernCall } from './call';
import { declaresTasks, metaKey, tasksExtensionRequired } from './protocol';
import { detailedTaskFor } from './tasks';

/**
 * subscriptions/listen (2026-07-28): a long-lived response stream of the notifications the client asked
 * for, in place of the legacy GET stream. It agrees to notifications/tasks (the tasks extension) for the
 * caller's own tasks and to notifications/tools/list_changed (the tools of the servers file change as
 * they come up or change their lists); it has no prompts or resources, so those are left out of the
 * acknowledgement. Progress and log messages never go here: they belong to the request they are about.
 */

/** At most this many tasks on one stream. */
export const maxTaskIdsPerSubscription = 100;

const listenParamsSchema = z.object({
  notifications: z
    .object({
      toolsListChanged: z.boolean().optional(),
      promptsListChanged: z.boolean().optional(),
      resourcesListChanged: z.boolean().optional(),
      resourceSubscriptions: z.array(z.string()).optional(),
      taskIds: z.array(z.string().max(256)).max(maxTaskIdsPerSubscription).optional(),
    })
    .loose(),
});

/** Checks the filter before the stream opens: a refusal is an ordinary error response. */
export interface ListenFilter {
  taskIds: string[];
  toolsListChanged: boolean;
}

export function readListenFilter(rawParams: unknown, call: Pick<ModernCall, 'client'>): ListenFilter {
  const { notifications } = parseParams(listenParamsSchema, rawParams);
  if (notifications.taskIds !== undefined && !declaresTasks(call.client)) throw tasksExtensionRequired('Task status notifications (taskIds)');
  return { taskIds: [...new Set(notifications.taskIds ?? [])], toolsListChanged: notifications.toolsListChanged === true };
}

/**
 * Acknowledges on the stream, then sends each change of the subscribed tasks as the DetailedTask that
 * tasks/get would return at that moment. A task that has already ended, or waits for input, when the
 * subscription opens is sent at once after the acknowledgement: a client that waits for notifications
 * must not wait forever for a change that happened before it listened. Resolves with the release of
 * the subscription.
 */
export async function listen(stream: SseStream, filter: ListenFilter, call: ModernCall): Promise<() => void> {
  const subscriptionMeta = { [metaKey.subscriptionId]: call.requestId };
  const owned: string[] = [];
  for (const taskId of filter.taskIds) {
    try {
      await call.engine.getTaskStatus(taskId, call.userId);
      owned.push(taskId);
    } catch (error) {
      // Another user's task, or none: left out of the acknowledgement, exactly alike.
      if (!isTaskError(error)) throw error;
    }
  }
  stream.send({
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: {
      _meta: subscriptionMeta,
      notifications: { ...(owned.length > 0 ? { taskIds: owned } : {}), ...(filter.toolsListChanged ? { toolsListChanged: true } : {}) },
    },
  });
  const stopListening = filter.toolsListChanged
    ? onToolsChanged(() => {
        if (!stream.closed) stream.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: subscriptionMeta } });
      })
    : () => {};
  const unsubscribes = owned.map((taskId) => {
    // One read at a time per task, in order: each notification is the task as it is when sent.
    let queue = Promise.resolve();
    let lastSent = '';
    const sendTask = (onlyIf?: (status: TaskStatus) => boolean) => {
      queue = queue
        .then(async () => {
          if (stream.closed) return;
          const task = await detailedTaskFor(call, taskId, call.userId);
          if (onlyIf && !onlyIf(task.status as TaskStatus)) return;
          const text = JSON.stringify(task);
          if (text === lastSent) return;
          lastSent = text;
          stream.send({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...task, _meta: subscriptionMeta } });
        })
        .catch((error: unknown) => {
          if (!isTaskError(error)) console.error(`A notifications/tasks for task ${taskId} was lost`, error);
        });
    };
    // Subscribed before the first read, so that no change falls between the two.
    const unsubscribe = call.engine.bus.subscribe(topics.task(taskId), (event) => {
      if (event.type === 'task-progress' || event.type === 'task-log' || event.type === 'task-stream-close') return;
      if (event.type === 'task-changed' && !event.transition) return;
      sendTask();
    });
    sendTask((status) => status === 'input_required' || isTerminal(status));
    return unsubscribe;
  });
  return () => {
    stopListening();
    unsubscribes.forEach((unsubscribe) => unsubscribe());
  };
}
