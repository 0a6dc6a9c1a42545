import type { BusEvent, EventBus } from './bus';

/**
 * Waits on the bus, never by polling: runs `check` now and again after every event on `topic` that
 * `wakesOn` accepts, until it resolves with something. Subscribing before the first check means no
 * event can slip between the two; an event that comes while a check reads the database runs it again.
 */
export async function waitFor<T>(
  bus: EventBus,
  topic: string,
  check: () => Promise<T | undefined> | T | undefined,
  signal?: AbortSignal,
  wakesOn: (event: BusEvent) => boolean = () => true,
): Promise<T> {
  let changed = false;
  let wake = () => {};
  const unsubscribe = bus.subscribe(topic, (event) => {
    if (!wakesOn(event)) return;
    changed = true;
    wake();
  });
  try {
    for (;;) {
      changed = false;
      signal?.throwIfAborted();
      const found = await check();
      if (found !== undefined) return found;
      if (changed) continue;
      // Aborted while the check ran: its abort event has passed.
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal?.reason);
        signal?.addEventListener('abort', onAbort, { once: true });
        wake = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
      });
    }
  } finally {
    unsubscribe();
  }
}
