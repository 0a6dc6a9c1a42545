// Runs the queries of tests/helpers/sync-postgres.ts on one connection and wakes the waiting test.
import { workerData } from 'node:worker_threads';
import pg from 'pg';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
const flag = new Int32Array(workerData.flag);
const { port } = workerData;
const client = new pg.Client({ connectionString: workerData.url });
const connected = client.connect();

port.on('message', async ({ text, params }) => {
  let reply;
  try {
    await connected;
    const result = await client.query(text, params);
    reply = { rows: result.rows, rowCount: result.rowCount ?? 0 };
  } catch (error) {
    reply = { error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
port.on('close', () => void client.end());
