import { EventEmitter } from 'node:events';
import type { TaskRow } from '@/db/queries/tasks';

/**
 * Wakes whoever waits on a task, a user's dashboard or a session's stream. In-process today; a
 * deployment of several instances swaps in one backed by the database behind this same interface.
 */
export interface EventBus {
  publish(topic: string, event: BusEvent): void;
  subscribe(topic: string, listener: (event: BusEvent) => void): () => void;
}

export type BusEvent =
  | { type: 'task-changed'; task: TaskRow; transition: boolean }
  | { type: 'task-progress'; task: TaskRow; progress: number; total?: number; message?: string }
  | { type: 'task-deleted'; taskId: string; userId: string }
  | { type: 'session-message'; sessionId: string; messageId: number };

export const topics = {
  allTasks: 'tasks',
  task: (taskId: string) => `task:${taskId}`,
  user: (userId: string) => `user:${userId}`,
  session: (sessionId: string) => `session:${sessionId}`,
};

export type TaskBusEvent = Exclude<BusEvent, { type: 'session-message' }>;

/** A task event goes to the task's waiters, its owner's dashboards and the session notifier. */
export function publishTaskEvent(bus: EventBus, event: TaskBusEvent): void {
  const [taskId, userId] = event.type === 'task-deleted' ? [event.taskId, event.userId] : [event.task.id, event.task.userId];
  bus.publish(topics.task(taskId), event);
  bus.publish(topics.user(userId), event);
  bus.publish(topics.allTasks, event);
}

export function createInProcessBus(): EventBus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    publish(topic, event) {
      emitter.emit(topic, event);
    },
    subscribe(topic, listener) {
      emitter.on(topic, listener);
      return () => emitter.off(topic, listener);
    },
  };
}
