/**
 * Runs once when the server starts: checks that the database's folder can keep it (`next start`; npm
 * start's server has checked already), recovers interrupted tasks and starts the TTL sweeper at once.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { exitUnlessStorageFit } = await import('./lib/storage/startup');
    exitUnlessStorageFit();
    const { getRuntime } = await import('./lib/runtime');
    getRuntime();
  }
}
