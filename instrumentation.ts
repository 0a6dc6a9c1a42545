/**
 * Runs once when the server starts, before it serves: checks that the database's folder can keep it
 * (`next start`; npm start's server has checked already) and that the servers file is valid, settles the signing secret (one differing from
 * the running instances' stops the start with one line), recovers interrupted tasks and starts the TTL
 * sweeper at once.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { exitUnlessStorageFit } = await import('./lib/storage/startup');
    exitUnlessStorageFit();
    const { getEnv } = await import('./lib/env');
    const { exitUnlessServersFileFits } = await import('./lib/upstreams/config');
    exitUnlessServersFileFits(getEnv().MCP_SERVERS_FILE);
    const { resolveServerSecret, SecretConflict } = await import('./lib/auth/secret');
    try {
      await resolveServerSecret();
    } catch (error) {
      const { describePostgresError } = await import('./db/postgres-copy');
      console.error(error instanceof SecretConflict ? error.message : `Could not settle the signing secret: ${describePostgresError(error)}`);
      process.exit(1);
    }
    const { getRuntime } = await import('./lib/runtime');
    getRuntime();
  }
}
