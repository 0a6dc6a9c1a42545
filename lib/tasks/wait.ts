import type { BusEvent, EventBus } from './bus';

/**
 * What can stop a wait besides an AbortSignal: a request's cancellation, which makes its AbortSignal
 * only when one is asked for (lib/mcp/http/in-flight.ts). Thousands of requests may wait at once, and a
 * signal with its listeners is not free.
 */
export interface StopSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addAbortListener(listener: () => void): void;
  removeAbortListener(listener: () => void): void;
}

export type WaitSignal = AbortSignal | StopSignal;

const always = () => true;

/**
 * Waits on the bus, never by polling: runs `check` now and again after every event on `topic` that
 * `wakesOn` accepts, until it resolves with something. Subscribing before the first check means no
 * event can slip between the two; an event that comes while a check reads the database runs it again.
 * An abort ends the wait with the signal's reason, once a check under way has ended (what it found
 * still counts).
 */
export function waitFor<T>(
  bus: EventBus,
  topic: string,
  check: () => Promise<T | undefined> | T | undefined,
  signal?: WaitSignal,
  wakesOn: (event: BusEvent) => boolean = always,
): Promise<T> {
  return new Promise<T>((resolve, reject) => new Waiting(bus, topic, check, signal, wakesOn, resolve, reject).wake());
}

/**
 * One wait, as a record the bus wakes rather than a suspended call: between checks it holds its fields
 * and two listeners, nothing else.
 */
class Waiting<T> {
  /** An event (or the start) asked for a check that has not run yet. */
  private changed = false;
  private checking = false;
  private ended = false;
  private readonly unsubscribe: () => void;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    bus: EventBus,
    topic: string,
    private readonly check: () => Promise<T | undefined> | T | undefined,
    private readonly signal: WaitSignal | undefined,
    wakesOn: (event: BusEvent) => boolean,
    private readonly resolve: (value: T) => void,
    private readonly reject: (reason: unknown) => void,
  ) {
    this.unsubscribe = bus.subscribe(topic, (event) => {
      if (wakesOn(event)) this.wake();
    });
    if (signal) {
      // A check under way finishes first: the loop then sees the abort.
      this.onAbort = () => {
        if (!this.checking) this.end(() => this.reject(signal.reason));
      };
      if (signal instanceof AbortSignal) signal.addEventListener('abort', this.onAbort, { once: true });
      else signal.addAbortListener(this.onAbort);
    }
  }

  wake(): void {
    this.changed = true;
    if (!this.checking && !this.ended) void this.run();
  }

  private async run(): Promise<void> {
    this.checking = true;
    try {
      while (this.changed && !this.ended) {
        this.changed = false;
        if (this.signal?.aborted) break;
        const found = await this.check();
        if (found !== undefined) return this.end(() => this.resolve(found));
      }
      if (this.signal?.aborted) this.end(() => this.reject(this.signal!.reason));
    } catch (error) {
      this.end(() => this.reject(error));
    } finally {
      this.checking = false;
    }
  }

  private end(settle: () => void): void {
    if (this.ended) return;
    this.ended = true;
    this.unsubscribe();
    const { signal, onAbort } = this;
    if (signal && onAbort) {
      if (signal instanceof AbortSignal) signal.removeEventListener('abort', onAbort);
      else signal.removeAbortListener(onAbort);
    }
    settle();
  }
}
