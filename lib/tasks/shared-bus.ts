import { getStore } from '@/db/client';
import { MAX_NOTIFY_PAYLOAD_BYTES, notify, subscribeNotifications } from '@/db/notify';
import { getTaskInputById } from '@/db/queries/inputs';
import { getTaskById } from '@/db/queries/tasks';
import { createInProcessBus, publishTaskEvent, topics, type BusEvent, type EventBus, type TaskBusEvent } from './bus';

/**
 * The bus of an instance that shares its PostgreSQL database with others. Every event is delivered in
 * this process at once, as the in-process bus does, and sent to the other instances as one small
 * notification (what changed, and the id to read it by). An instance that hears one reads the row and
 * delivers the event to its own listeners, marked `remote`: listeners that write (the session's status
 * notification) or log leave those to the instance where the change happened.
 *
 * When the listening connection comes back after a drop, every topic with listeners gets a `resync`
 * event: waiters read again what they wait for, as they do on any event.
 */
type Wire =
  | { k: 'task'; t: string; u: string; tr: boolean }
  | { k: 'progress'; t: string; u: string; p: number; n?: number; m?: string }
  | { k: 'log'; t: string; u: string; l: string; d: unknown; g?: string }
  | { k: 'close'; t: string; u: string }
  | { k: 'deleted'; t: string; u: string }
  | { k: 'input'; i: string; t: string; u: string }
  | { k: 'message'; s: string; st: string | null; id: number }
  | { k: 'released' };

const wireKinds = new Set(['task', 'progress', 'log', 'close', 'deleted', 'input', 'message', 'released']);

export function createSharedBus(instanceId: string): EventBus & { close(): void } {
  const store = getStore();
  if (store.dialect !== 'pg') throw new Error('The shared bus needs DATABASE_URL (PostgreSQL)');
  const local = createInProcessBus();
  const stop = subscribeNotifications(store, {
    onPayload: (payload) => {
      if (payload.o === instanceId || !wireKinds.has(payload.k as string)) return;
      receive(payload as Wire).catch((error: unknown) => console.error('A notification from another instance could not be read', error));
    },
    onReconnect: () => local.resync(),
  });

  const send = (wire: Wire) => {
    const payload = JSON.stringify({ o: instanceId, ...wire });
    if (Buffer.byteLength(payload) > MAX_NOTIFY_PAYLOAD_BYTES) {
      // Only a log message's data can be this large: other instances get it without its data.
      if (wire.k !== 'log') return;
      return send({ ...wire, d: '(too large to relay to another instance)' });
    }
    notify(store, payload).catch((error: unknown) => console.error('Could not notify the other instances', error));
  };

  async function receive(message: Wire): Promise<void> {
    if (message.k === 'message') {
      local.publish(topics.sessionStream(message.s, message.st), { type: 'session-message', sessionId: message.s, messageId: message.id, remote: true });
      return;
    }
    if (message.k === 'released') {
      local.publish(topics.leases, { type: 'leases-released', remote: true });
      return;
    }
    // Only an instance where someone follows the task (a waiter, a stream, its running tool, the owner's
    // dashboard) reads the row: the others have nothing to wake.
    const followed =
      local.hasListeners(topics.task(message.t)) || local.hasListeners(topics.user(message.u)) || (message.k === 'input' && local.hasListeners(topics.input(message.i)));
    if (!followed) return;
    const event = await readEvent(message);
    if (event) publishTaskEvent(local, event);
  }

  return {
    publish(topic, event) {
      local.publish(topic, event);
      if (event.remote) return;
      // A task event is published on several topics; the one every task event has sends it once.
      if (event.type === 'session-message') {
        const stream = topic.slice(topics.sessionStream(event.sessionId, null).length) || null;
        send({ k: 'message', s: event.sessionId, st: stream, id: event.messageId });
      } else if (event.type === 'leases-released') {
        send({ k: 'released' });
      } else if (topic === topics.allTasks && event.type !== 'resync') {
        send(wireOf(event));
      }
    },
    subscribe: (topic, listener) => local.subscribe(topic, listener),
    resync: () => local.resync(),
    close: stop,
  };
}

function wireOf(event: TaskBusEvent): Wire {
  switch (event.type) {
    case 'task-changed':
      return { k: 'task', t: event.task.id, u: event.task.userId, tr: event.transition };
    case 'task-progress':
      return { k: 'progress', t: event.task.id, u: event.task.userId, p: event.progress, n: event.total, m: event.message };
    case 'task-log':
      return { k: 'log', t: event.task.id, u: event.task.userId, l: event.level, d: event.data, g: event.logger };
    case 'task-stream-close':
      return { k: 'close', t: event.task.id, u: event.task.userId };
    case 'task-deleted':
      return { k: 'deleted', t: event.taskId, u: event.userId };
    case 'input-changed':
      return { k: 'input', i: event.input.id, t: event.input.taskId, u: event.input.userId };
  }
}

/** The event a notification stands for, with the rows read now; undefined when the row is gone. */
async function readEvent(message: Exclude<Wire, { k: 'message' } | { k: 'released' }>): Promise<TaskBusEvent | undefined> {
  if (message.k === 'deleted') return { type: 'task-deleted', taskId: message.t, userId: message.u, remote: true };
  if (message.k === 'input') {
    const input = await getTaskInputById(message.i);
    return input && { type: 'input-changed', input, remote: true };
  }
  const task = await getTaskById(message.t);
  if (!task) return undefined;
  switch (message.k) {
    case 'task':
      return { type: 'task-changed', task, transition: message.tr, remote: true };
    case 'progress':
      return { type: 'task-progress', task, progress: message.p, total: message.n, message: message.m, remote: true };
    case 'log':
      return { type: 'task-log', task, level: message.l as Extract<TaskBusEvent, { type: 'task-log' }>['level'], data: message.d, logger: message.g, remote: true };
    case 'close':
      return { type: 'task-stream-close', task, remote: true };
  }
}
