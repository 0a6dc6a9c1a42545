import type { StopSignal } from '@/lib/tasks/wait';

/**
 * Requests in flight, of both eras, so that notifications/cancelled, DELETE and shutdown can stop them; and the one
 * reason a shutdown gives, told apart by identity (each route bundle may hold its own copy of this module).
 */
const globalForRequests = globalThis as unknown as { __mcpTaskServerInFlight?: Map<string, Abortable>; __mcpTaskServerShutdown?: DOMException };
/** What a request in flight is stopped through: an AbortController, or a LazyAbort. */
export interface Abortable {
  abort(reason?: unknown): void;
}

/**
 * An AbortController made only when its signal is first read: most requests (ping, tasks/get) end
 * before anything listens, and a controller with its signal and listeners is not free. An abort before
 * then is remembered: `onAbort` runs at once, and the signal, when it is read, is already aborted.
 * `onSignal` runs when the signal is made, to hook it to what else may abort it. A wait follows it
 * without a signal at all (StopSignal): its listeners run after `onAbort`, before the signal's.
 */
export class LazyAbort implements Abortable, StopSignal {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;
  #listeners: Array<() => void> | undefined;

  constructor(private readonly hooks: { onAbort?: () => void; onSignal?: () => void } = {}) {}

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
      this.hooks.onSignal?.();
    }
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  addAbortListener(listener: () => void): void {
    if (this.#aborted) listener();
    else (this.#listeners ??= []).push(listener);
  }

  removeAbortListener(listener: () => void): void {
    const index = this.#listeners?.indexOf(listener) ?? -1;
    if (index >= 0) this.#listeners!.splice(index, 1);
  }

  abort(reason?: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    // First, as the listener added first would run first on a signal.
    this.hooks.onAbort?.();
    const listeners = this.#listeners;
    this.#listeners = undefined;
    for (const listener of listeners ?? []) listener();
    this.#controller?.abort(reason);
  }
}

export const inFlight = (globalForRequests.__mcpTaskServerInFlight ??= new Map());
export const shuttingDown = (globalForRequests.__mcpTaskServerShutdown ??= new DOMException('The server is shutting down', 'AbortError'));

/** Stops every request in flight (the process is shutting down). */
export function abortRequestsInFlight(): void {
  for (const controller of inFlight.values()) controller.abort(shuttingDown);
}

