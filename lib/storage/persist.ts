import { storageTroubleIn } from './trouble';

const firstPauseMs = 250;
const longestPauseMs = 5_000;

/**
 * A bookkeeping write (when a token or session was last used) that storage in trouble may skip: the
 * request it rides on is served all the same, and the next one writes it.
 */
export async function unlessStorageTrouble(write: Promise<unknown>): Promise<void> {
  try {
    await write;
  } catch (error) {
    if (!storageTroubleIn(error)) throw error;
  }
}

/** A write given up on: storage stayed in trouble past the bound. */
export class StorageGaveUp extends Error {
  override name = 'StorageGaveUp';
}

/**
 * Runs a write until it commits: storage trouble (full, busy, read-only, unreachable) is waited out
 * with a growing pause; any other error is thrown at once. With `withinMs`, it gives up after that long
 * (StorageGaveUp, carrying the last error as its cause); with a signal, it stops when that aborts.
 */
export async function persistently<T>(write: () => Promise<T>, options: { withinMs?: number; signal?: AbortSignal; what: string }): Promise<T> {
  const deadline = options.withinMs === undefined ? Infinity : Date.now() + options.withinMs;
  let pause = firstPauseMs;
  let warned = false;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      const done = await write();
      if (warned) console.warn(`Storage: ${options.what} was saved after all.`);
      return done;
    } catch (error) {
      const trouble = storageTroubleIn(error);
      if (!trouble) throw error;
      if (!warned) console.warn(`Storage: could not save ${options.what} (${trouble.kind}); trying again until it can be.`);
      warned = true;
      if (Date.now() + pause > deadline) throw new StorageGaveUp(`storage stayed ${trouble.kind === 'full' ? 'full' : `in trouble (${trouble.kind})`}`, { cause: error });
    }
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, pause);
      options.signal?.addEventListener('abort', () => (clearTimeout(timer), reject(options.signal!.reason)), { once: true });
    });
    pause = Math.min(pause * 2, longestPauseMs);
  }
}
