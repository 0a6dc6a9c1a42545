import { z } from 'zod';
import { getStore } from '@/db/client';
import { notify, notifyWithRelayedMessage, readRelayedMessage, subscribeNotifications, sweepRelayedMessages } from '@/db/notify';
import { getTaskInputById } from '@/db/queries/inputs';
import { getTaskById } from '@/db/queries/tasks';
import { logLevels } from '@/lib/tools/define';
import { createInProcessBus, publishTaskEvent, topics, type BusEvent, type EventBus, type TaskBusEvent } from './bus';

/**
 * The bus of an instance that shares its PostgreSQL database with others. Every event is delivered in
 * this process at once, as the in-process bus does, and sent to the other instances as one small
 * notification (what changed, and the id to read it by). An instance that hears one reads the row and
 * delivers the event to its own listeners, marked `remote`: listeners that write (the session's status
 * notification) or log leave those to the instance where the change happened.
 *
 * Anyone allowed to connect to the database can listen on the channel and send on it. So a notification
 * carries ids only, and nothing it claims is believed: the event delivered is built from the rows read
 * (a task's progress from the task, a deletion only when the task is gone), and a log message, which no
 * other row holds, is kept in `relayed_messages` for the notification to point to. A forged notification
 * costs a read of the truth, and its listeners a wake-up.
 *
 * When the listening connection comes back after a drop, every topic with listeners gets a `resync`
 * event: waiters read again what they wait for, as they do on any event.
 */
const id = z.string().min(1).max(200);
const relayedId = z.number().int().positive();
const wireSchema = z.discriminatedUnion('k', [
  /** `tr`: the change may be a transition; only decides which listeners read again. */
  z.object({ k: z.literal('task'), t: id, u: id, tr: z.boolean() }),
  z.object({ k: z.literal('progress'), t: id, u: id }),
  z.object({ k: z.literal('log'), t: id, u: id, r: relayedId }),
  z.object({ k: z.literal('close'), t: id, u: id, r: relayedId }),
  z.object({ k: z.literal('deleted'), t: id, u: id }),
  z.object({ k: z.literal('input'), i: id, t: id, u: id }),
  z.object({ k: z.literal('message'), s: id, st: id.nullable(), id: z.number().int() }),
  z.object({ k: z.literal('released') }),
]);
type Wire = z.infer<typeof wireSchema>;
/** What this instance sends: a log message's or a close's `r` is given by the database. */
type Outgoing = Exclude<Wire, { k: 'log' | 'close' }> | Omit<Extract<Wire, { k: 'log' | 'close' }>, 'r'>;

const logMessageSchema = z.object({ level: z.enum(logLevels), data: z.unknown(), logger: z.string().optional() });

/** Relayed messages are read within milliseconds of their notification; a minute is plenty. */
const relayedMessageKeepMs = 60_000;
const relayedMessageSweepMs = 30_000;
/** Relayed messages already delivered here, so that a notification sent again delivers nothing twice. */
const deliveredRelayedLimit = 10_000;

export function createSharedBus(instanceId: string): EventBus & { close(): void } {
  const opened = getStore();
  if (opened.dialect !== 'pg') throw new Error('The shared bus needs DATABASE_URL (PostgreSQL)');
  const store = opened;
  const local = createInProcessBus();
  const deliveredRelayed = new Set<number>();
  const stop = subscribeNotifications(store, {
    onPayload: (payload) => {
      if (payload.o === instanceId) return;
      const parsed = wireSchema.safeParse(payload);
      if (!parsed.success) return;
      receive(parsed.data).catch((error: unknown) => console.error('A notification from another instance could not be read', error));
    },
    onReconnect: () => local.resync(),
  });
  const sweep = setInterval(() => {
    sweepRelayedMessages(store, Date.now() - relayedMessageKeepMs).catch((error: unknown) => console.error('Deleting relayed messages failed', error));
  }, relayedMessageSweepMs);
  sweep.unref();

  const sent = (error: unknown) => console.error('Could not notify the other instances', error);
  const send = (wire: Outgoing, relayed?: { taskId: string; message: unknown }) => {
    const payload = { o: instanceId, ...wire };
    if (relayed) notifyWithRelayedMessage(store, payload, relayed.taskId, relayed.message).catch(sent);
    else notify(store, JSON.stringify(payload)).catch(sent);
  };

  /** Whether this relayed message is new here; remembers it. */
  const firstDelivery = (relayed: number): boolean => {
    if (deliveredRelayed.has(relayed)) return false;
    deliveredRelayed.add(relayed);
    if (deliveredRelayed.size > deliveredRelayedLimit) deliveredRelayed.delete(deliveredRelayed.values().next().value as number);
    return true;
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

  /** The event a notification stands for, built from the rows read now; undefined when they say nothing happened. */
  async function readEvent(message: Exclude<Wire, { k: 'message' } | { k: 'released' }>): Promise<TaskBusEvent | undefined> {
    if (message.k === 'input') {
      const input = await getTaskInputById(message.i);
      return input && { type: 'input-changed', input, remote: true };
    }
    const task = await getTaskById(message.t);
    if (message.k === 'deleted') return task ? undefined : { type: 'task-deleted', taskId: message.t, userId: message.u, remote: true };
    if (!task) return undefined;
    switch (message.k) {
      case 'task':
        return { type: 'task-changed', task, transition: message.tr, remote: true };
      case 'progress':
        // Reports are stored about once a second: one not stored yet is seen with the next.
        if (task.progress === null) return undefined;
        return {
          type: 'task-progress',
          task,
          progress: task.progress,
          ...(task.progressTotal !== null ? { total: task.progressTotal } : {}),
          ...(task.progressMessage !== null ? { message: task.progressMessage } : {}),
          remote: true,
        };
      case 'log': {
        const log = logMessageSchema.safeParse(await readRelayedMessage(store, message.r, task.id));
        if (!log.success || !firstDelivery(message.r)) return undefined;
        return { type: 'task-log', task, level: log.data.level, data: log.data.data, ...(log.data.logger !== undefined ? { logger: log.data.logger } : {}), remote: true };
      }
      case 'close': {
        const close = await readRelayedMessage(store, message.r, task.id);
        if (close === undefined || !firstDelivery(message.r)) return undefined;
        return { type: 'task-stream-close', task, remote: true };
      }
    }
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
        sendTaskEvent(event);
      }
    },
    subscribe: (topic, listener) => local.subscribe(topic, listener),
    resync: () => local.resync(),
    close: () => {
      clearInterval(sweep);
      stop();
    },
  };

  function sendTaskEvent(event: TaskBusEvent): void {
    switch (event.type) {
      case 'task-changed':
        return send({ k: 'task', t: event.task.id, u: event.task.userId, tr: event.transition });
      case 'task-progress':
        return send({ k: 'progress', t: event.task.id, u: event.task.userId });
      case 'task-log':
        return send(
          { k: 'log', t: event.task.id, u: event.task.userId },
          { taskId: event.task.id, message: { level: event.level, data: event.data, ...(event.logger !== undefined ? { logger: event.logger } : {}) } },
        );
      case 'task-stream-close':
        return send({ k: 'close', t: event.task.id, u: event.task.userId }, { taskId: event.task.id, message: {} });
      case 'task-deleted':
        return send({ k: 'deleted', t: event.taskId, u: event.userId });
      case 'input-changed':
        return send({ k: 'input', i: event.input.id, t: event.input.taskId, u: event.input.userId });
    }
  }
}
