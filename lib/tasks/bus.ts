import { EventEmitter } from 'node:events';
import type { TaskInputRow } from '@/db/queries/inputs';
import type { TaskRow } from '@/db/queries/tasks';
import type { LogLevel } from '@/lib/tools/define';

/**
 * Wakes whoever waits on a task, a user's dashboard or a session's stream: in-process on SQLite, and
 * across instances on PostgreSQL (lib/tasks/shared-bus.ts), behind this same interface.
 */
export interface EventBus {
  publish(topic: string, event: BusEvent): void;
  subscribe(topic: string, listener: (event: BusEvent) => void): () => void;
  /** Tells every listener to read again what it follows: events may have been missed. */
  resync(): void;
}

/**
 * `remote`: the change happened on another instance, which has written and logged what follows from it;
 * listeners here only wake what waits in this process.
 */
export type BusEvent = (
  | { type: 'task-changed'; task: TaskRow; transition: boolean }
  | { type: 'task-progress'; task: TaskRow; progress: number; total?: number; message?: string }
  | { type: 'task-log'; task: TaskRow; level: LogLevel; data: unknown; logger?: string }
  | { type: 'task-stream-close'; task: TaskRow }
  | { type: 'task-deleted'; taskId: string; userId: string }
  | { type: 'input-changed'; input: TaskInputRow }
  | { type: 'session-message'; sessionId: string; messageId: number }
  /** Events may have been missed (the connection that carries them dropped): read again. */
  | { type: 'resync' }
  /** An instance that is stopping handed its tasks back: take them over now. */
  | { type: 'leases-released' }
) & { remote?: true };

export const topics = {
  allTasks: 'tasks',
  /** Leases handed back by an instance that is stopping. */
  leases: 'leases',
  task: (taskId: string) => `task:${taskId}`,
  input: (inputId: string) => `input:${inputId}`,
  user: (userId: string) => `user:${userId}`,
  /** New messages of one of a session's streams: its GET stream (`stream` null) or one response stream. */
  sessionStream: (sessionId: string, stream: string | null) => `session:${sessionId}:${stream ?? ''}`,
};

export type TaskBusEvent = Exclude<BusEvent, { type: 'session-message' } | { type: 'resync' } | { type: 'leases-released' }>;

/** The task and user an event is about. */
export function ownerOf(event: TaskBusEvent): { taskId: string; userId: string } {
  if (event.type === 'task-deleted') return { taskId: event.taskId, userId: event.userId };
  if (event.type === 'input-changed') return { taskId: event.input.taskId, userId: event.input.userId };
  return { taskId: event.task.id, userId: event.task.userId };
}

/** A task event goes to the task's waiters, its owner's dashboards and the session notifier. */
export function publishTaskEvent(bus: EventBus, event: TaskBusEvent): void {
  const { taskId, userId } = ownerOf(event);
  if (event.type === 'input-changed') bus.publish(topics.input(event.input.id), event);
  bus.publish(topics.task(taskId), event);
  // Log messages and closed connections change nothing the dashboard shows: they would only make it reload.
  if (event.type !== 'task-log' && event.type !== 'task-stream-close') bus.publish(topics.user(userId), event);
  bus.publish(topics.allTasks, event);
}

export function createInProcessBus(): EventBus & { hasListeners(topic: string): boolean } {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  const publish = (topic: string, event: BusEvent) => {
    // A failing listener is its own problem: it must not stop the others, nor fail the publisher (events
    // are published once their change has committed). Listeners are synchronous: one that must write
    // starts the write and handles its rejection itself. Isolated here, not by a wrapper per
    // subscription: thousands of waits may be subscribed at once.
    for (const listener of emitter.listeners(topic) as Array<(event: BusEvent) => void>) {
      try {
        listener(event);
      } catch (error) {
        console.error(`A listener of ${topic} failed`, error);
      }
    }
  };
  return {
    hasListeners: (topic) => emitter.listenerCount(topic) > 0,
    publish,
    resync() {
      for (const topic of emitter.eventNames()) if (typeof topic === 'string') publish(topic, { type: 'resync' });
    },
    subscribe(topic, listener) {
      emitter.on(topic, listener);
      return () => emitter.off(topic, listener);
    },
  };
}
