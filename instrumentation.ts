/** Runs once when the server starts: recovers interrupted tasks and starts the TTL sweeper at once. */
export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { getRuntime } = await import('./lib/runtime');
    getRuntime();
  }
}
