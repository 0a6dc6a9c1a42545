import pg from 'pg';
import type { Store } from './client';

/**
 * PostgreSQL LISTEN/NOTIFY on one channel: the wake-ups that cross instances (lib/tasks/shared-bus.ts)
 * and the row changes that drop cache entries (db/cache.ts, sent by triggers). One listening connection
 * per process, opened by the first subscriber. When it drops (the server restarted, the network broke)
 * it is opened again, and every subscriber's `onReconnect` runs: notifications may have been missed.
 *
 * Any role that may connect to the database can LISTEN and NOTIFY on any channel, whatever its table
 * privileges: a payload carries only ids, never data, and a listener believes only the rows it reads.
 */
export const NOTIFY_CHANNEL = 'mcp_task_server';

interface Subscriber {
  onPayload(payload: Record<string, unknown>): void;
  onReconnect(): void;
}

interface Listener {
  store: Extract<Store, { dialect: 'pg' }>;
  subscribers: Set<Subscriber>;
  client?: pg.Client;
  closed: boolean;
}

const globalForListener = globalThis as unknown as { __mcpTaskServerListener?: Listener };

function start(listener: Listener, isReconnect: boolean, retryMs = 100): void {
  if (listener.closed) return;
  const client = new pg.Client({ connectionString: listener.store.pool.options.connectionString });
  client.on('notification', (message) => {
    if (message.channel !== NOTIFY_CHANNEL || !message.payload) return;
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(message.payload) as Record<string, unknown>;
    } catch {
      return;
    }
    for (const subscriber of listener.subscribers) subscriber.onPayload(payload);
  });
  client.on('error', () => {
    // 'end' follows, and opens the connection again.
  });
  client.on('end', () => {
    if (listener.client !== client) return;
    listener.client = undefined;
    if (!listener.closed) setTimeout(() => start(listener, true), 100).unref();
  });
  client
    .connect()
    .then(() => client.query(`LISTEN ${NOTIFY_CHANNEL}`))
    .then(
      () => {
        if (listener.closed) return void client.end();
        listener.client = client;
        if (isReconnect) for (const subscriber of listener.subscribers) subscriber.onReconnect();
      },
      (error: Error) => {
        void client.end().catch(() => {});
        const next = Math.min(retryMs * 2, 5_000);
        console.error(`PostgreSQL listener: ${error.message}; trying again in ${next} ms`);
        setTimeout(() => start(listener, true, next), next).unref();
      },
    );
}

/** Follows the channel on this store's server; returns the way to stop following. */
export function subscribeNotifications(store: Extract<Store, { dialect: 'pg' }>, subscriber: Subscriber): () => void {
  let listener = globalForListener.__mcpTaskServerListener;
  if (!listener || listener.store !== store) {
    listener = { store, subscribers: new Set(), closed: false };
    globalForListener.__mcpTaskServerListener = listener;
    start(listener, false);
  }
  listener.subscribers.add(subscriber);
  const current = listener;
  return () => current.subscribers.delete(subscriber);
}

/**
 * Sends a notification. Those sent in the same turn of the event loop go in one statement, in the order
 * they were sent (a creation and an ending under load are many at once): each resolves once it is sent.
 */
export function notify(store: Extract<Store, { dialect: 'pg' }>, payload: string): Promise<void> {
  let batch = notifyBatches.get(store);
  if (!batch) {
    const started: NotifyBatch = { payloads: [], sent: Promise.resolve() };
    started.sent = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      notifyBatches.delete(store);
      await store.pool.query('SELECT pg_notify($1, payload) FROM unnest($2::text[]) WITH ORDINALITY AS sent (payload, position) ORDER BY position', [NOTIFY_CHANNEL, started.payloads]);
    });
    notifyBatches.set(store, started);
    batch = started;
  }
  batch.payloads.push(payload);
  return batch.sent;
}

interface NotifyBatch {
  payloads: string[];
  sent: Promise<void>;
}

const notifyBatches = new WeakMap<Extract<Store, { dialect: 'pg' }>, NotifyBatch>();

/**
 * Notifies with a payload that points to a message kept in `relayed_messages` (a tool's log line, its
 * request to close a stream: things no other row holds) as `r`, the message's id. One statement: the
 * message is committed before the notification is sent.
 */
export async function notifyWithRelayedMessage(store: Extract<Store, { dialect: 'pg' }>, payload: Record<string, unknown>, taskId: string, message: unknown): Promise<void> {
  await store.pool.query(
    `WITH kept AS (INSERT INTO relayed_messages (task_id, message, created_at) VALUES ($2, $3, $4) RETURNING id)
     SELECT pg_notify($1, ($5::jsonb || jsonb_build_object('r', kept.id))::text) FROM kept`,
    [NOTIFY_CHANNEL, taskId, JSON.stringify(message), Date.now(), JSON.stringify(payload)],
  );
}

/** The message a notification points to, when it is one of that task's; undefined otherwise. */
export async function readRelayedMessage(store: Extract<Store, { dialect: 'pg' }>, id: number, taskId: string): Promise<unknown> {
  const { rows } = await store.pool.query<{ message: string }>('SELECT message FROM relayed_messages WHERE id = $1 AND task_id = $2', [id, taskId]);
  return rows.length > 0 ? JSON.parse(rows[0].message) : undefined;
}

/** Deletes the relayed messages written before `before` (ms since the epoch): every listener has read them. */
export async function sweepRelayedMessages(store: Extract<Store, { dialect: 'pg' }>, before: number): Promise<void> {
  await store.pool.query('DELETE FROM relayed_messages WHERE created_at < $1', [before]);
}

/** Ends the listening connection (a CLI or a test that is done with the database). */
export async function closeNotifications(): Promise<void> {
  const listener = globalForListener.__mcpTaskServerListener;
  if (!listener) return;
  globalForListener.__mcpTaskServerListener = undefined;
  listener.closed = true;
  await listener.client?.end().catch(() => {});
}
