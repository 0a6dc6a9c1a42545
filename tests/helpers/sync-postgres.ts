import path from 'node:path';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';

/**
 * A PostgreSQL connection with better-sqlite3's synchronous `prepare(sql).get/all/run` shape, so that a
 * test reads and changes the server's PostgreSQL database with the same lines it uses on SQLite. The
 * query runs on a worker thread; the test thread waits for it (Atomics.wait), as SQLite would block.
 *
 * SQL is written as for SQLite: `?` parameters, and `json_extract(col, '$.a.b')` /
 * `json_set(col, '$.a', 'text')` on JSON text columns, are rewritten for PostgreSQL.
 */
export interface SyncStatement {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number };
  pluck(): SyncStatement;
}

export interface SyncDatabase {
  prepare(text: string): SyncStatement;
  close(): void;
}

/** `?` → `$n`, outside string literals. */
function numberParameters(text: string): string {
  let n = 0;
  let quoted = false;
  let out = '';
  for (const char of text) {
    if (char === "'") quoted = !quoted;
    out += !quoted && char === '?' ? `$${++n}` : char;
  }
  return out;
}

const jsonPath = (pathText: string) => `'{${pathText.replace(/^\$\./, '').split('.').join(',')}}'`;

export function toPostgresSql(text: string): string {
  return numberParameters(
    text
      .replace(/json_extract\((\w+), '(\$[^']*)'\)/g, (_match, column: string, pathText: string) => `(${column}::json #>> ${jsonPath(pathText)})`)
      .replace(
        /json_set\((\w+), '(\$[^']*)', '([^']*)'\)/g,
        (_match, column: string, pathText: string, value: string) => `jsonb_set(${column}::jsonb, ${jsonPath(pathText)}, to_jsonb('${value}'::text))::text`,
      ),
  );
}

export function openSyncPostgres(url: string): SyncDatabase {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(path.join(__dirname, 'pg-sync-worker.mjs'), { workerData: { url, flag: flag.buffer, port: port2 }, transferList: [port2] });
  worker.unref();
  const port: MessagePort = port1;

  const query = (text: string, params: unknown[]): { rows: Record<string, unknown>[]; rowCount: number } => {
    Atomics.store(flag, 0, 0);
    port.postMessage({ text: toPostgresSql(text), params });
    if (Atomics.wait(flag, 0, 0, 30_000) === 'timed-out') throw new Error(`PostgreSQL did not answer within 30 s: ${text}`);
    const reply = receiveMessageOnPort(port)?.message as { rows: Record<string, unknown>[]; rowCount: number } | { error: string } | undefined;
    if (!reply) throw new Error(`no reply from the PostgreSQL worker: ${text}`);
    if ('error' in reply) throw new Error(`${reply.error} (in: ${toPostgresSql(text)})`);
    return reply;
  };

  const statement = (text: string, plucked: boolean): SyncStatement => {
    const shape = (row: Record<string, unknown> | undefined) => (plucked && row ? Object.values(row)[0] : row);
    return {
      get: (...params) => shape(query(text, params).rows[0]),
      all: (...params) => query(text, params).rows.map(shape),
      run: (...params) => ({ changes: query(text, params).rowCount }),
      pluck: () => statement(text, true),
    };
  };

  return {
    prepare: (text) => statement(text, false),
    close: () => {
      port.close();
      void worker.terminate();
    },
  };
}
