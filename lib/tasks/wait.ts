import type { BusEvent, EventBus } from './bus';

/**
 * Waits on the bus, never by polling: runs `check` now and again after every event on `topic` that
 * `wakesOn` accepts, until it returns something. Subscribing before the first check means no event can
 * slip between the two.
 */
export async function waitFor<T>(
  bus: EventBus,
  topic: string,
  check: () => T | undefined,
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
      const found = check();
      if (found !== undefined) return found;
      if (changed) continue;
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
