// Runs the queries of tests/helpers/sync-postgres.ts on one connection and wakes the waiting test.
import { workerData } from 'node:worker_threads';
import pg from 'pg';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
const flag = new Int32Array(workerData.flag);
const { port } = workerData;

/** The open connection; a PostgreSQL stopped under the test (an outage suite) ends it, and the next query opens another. */
let open;
function connection() {
  if (!open) {
    const client = new pg.Client({ connectionString: workerData.url });
    client.on('error', () => {
      if (open?.client === client) open = undefined;
    });
    open = { client, connected: client.connect() };
  }
  return open;
}

port.on('message', async ({ text, params }) => {
  let reply;
  const { client, connected } = connection();
  try {
    await connected;
    const result = await client.query(text, params);
    reply = { rows: result.rows, rowCount: result.rowCount ?? 0 };
  } catch (error) {
    if (!client.readyForQuery && open?.client === client) open = undefined;
    reply = { error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
port.on('close', () => void open?.client.end());
