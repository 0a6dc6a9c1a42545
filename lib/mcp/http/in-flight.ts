/**
 * Requests in flight, of both eras, so that notifications/cancelled, DELETE and shutdown can stop them; and the one
 * reason a shutdown gives, told apart by identity (each route bundle may hold its own copy of this module).
 */
const globalForRequests = globalThis as unknown as { __mcpTaskServerInFlight?: Map<string, AbortController>; __mcpTaskServerShutdown?: DOMException };
export const inFlight = (globalForRequests.__mcpTaskServerInFlight ??= new Map());
export const shuttingDown = (globalForRequests.__mcpTaskServerShutdown ??= new DOMException('The server is shutting down', 'AbortError'));

/** Stops every request in flight (the process is shutting down). */
export function abortRequestsInFlight(): void {
  for (const controller of inFlight.values()) controller.abort(shuttingDown);
}

