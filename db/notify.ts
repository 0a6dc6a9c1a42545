import pg from 'pg';
import type { Store } from './client';

/**
 * PostgreSQL LISTEN/NOTIFY on one channel: the wake-ups that cross instances (lib/tasks/shared-bus.ts)
 * and the row changes that drop cache entries (db/cache.ts, sent by triggers). One listening connection
 * per process, opened by the first subscriber. When it drops (the server restarted, the network broke)
 * it is opened again, and every subscriber's `onReconnect` runs: notifications may have been missed.
 */
export const NOTIFY_CHANNEL = 'mcp_task_server';
/** PostgreSQL refuses a payload of 8000 bytes or more. */
export const MAX_NOTIFY_PAYLOAD_BYTES = 7_900;

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

export async function notify(store: Extract<Store, { dialect: 'pg' }>, payload: string): Promise<void> {
  await store.pool.query('SELECT pg_notify($1, $2)', [NOTIFY_CHANNEL, payload]);
}

/** Ends the listening connection (a CLI or a test that is done with the database). */
export async function closeNotifications(): Promise<void> {
  const listener = globalForListener.__mcpTaskServerListener;
  if (!listener) return;
  globalForListener.__mcpTaskServerListener = undefined;
  listener.closed = true;
  await listener.client?.end().catch(() => {});
}
