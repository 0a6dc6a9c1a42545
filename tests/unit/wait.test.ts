import { describe, expect, it } from 'vitest';
import { createInProcessBus, type BusEvent } from '@/lib/tasks/bus';
import { waitFor } from '@/lib/tasks/wait';
import { LazyAbort } from '@/lib/mcp/http/in-flight';

const topic = 'task:t1';
const changed = { type: 'resync' } satisfies BusEvent;
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A check whose answers the test gives one at a time, each when it wants the check to end. */
function manualCheck() {
  const calls: Array<(value: string | undefined) => void> = [];
  return {
    calls,
    check: () => new Promise<string | undefined>((resolve) => calls.push(resolve)),
  };
}

describe('waiting on the bus', () => {
  it('checks at once, again on each event it wakes on, and not on the others; then lets go of the topic', async () => {
    const bus = createInProcessBus();
    let value: string | undefined;
    let checks = 0;
    const waited = waitFor(bus, topic, () => (checks++, value), undefined, (event) => event.type === 'resync');
    expect(checks).toBe(1);
    bus.publish(topic, { type: 'leases-released' });
    await flush();
    expect(checks).toBe(1);
    bus.publish(topic, changed);
    await flush();
    expect(checks).toBe(2);
    value = 'done';
    bus.publish(topic, changed);
    await expect(waited).resolves.toBe('done');
    expect(checks).toBe(3);
    expect(bus.hasListeners(topic)).toBe(false);
  });

  it('checks again when an event comes while a check is reading, and never runs two checks at once', async () => {
    const bus = createInProcessBus();
    const { calls, check } = manualCheck();
    const waited = waitFor(bus, topic, check);
    expect(calls).toHaveLength(1);
    bus.publish(topic, changed);
    bus.publish(topic, changed);
    expect(calls).toHaveLength(1);
    calls[0](undefined);
    await flush();
    // Both events came during the first check: one more check covers them.
    expect(calls).toHaveLength(2);
    calls[1]('found');
    await expect(waited).resolves.toBe('found');
  });

  it('ends with the reason of an AbortSignal aborted while it waits, and lets go of the topic', async () => {
    const bus = createInProcessBus();
    const controller = new AbortController();
    const waited = waitFor(bus, topic, () => undefined, controller.signal);
    await flush();
    const reason = new Error('cancelled');
    controller.abort(reason);
    await expect(waited).rejects.toBe(reason);
    expect(bus.hasListeners(topic)).toBe(false);
  });

  it('follows a request cancellation without its signal: what a check under way finds still counts, else the abort ends the wait after it', async () => {
    const bus = createInProcessBus();
    for (const found of ['the result', undefined]) {
      let signalsMade = 0;
      const cancel = new LazyAbort({ onSignal: () => (signalsMade += 1) });
      const { calls, check } = manualCheck();
      const waited = waitFor(bus, topic, check, cancel);
      const reason = new Error('cancelled by the client');
      cancel.abort(reason);
      calls[0](found);
      if (found) await expect(waited).resolves.toBe(found);
      else await expect(waited).rejects.toBe(reason);
      expect(calls).toHaveLength(1);
      expect(signalsMade).toBe(0);
      expect(bus.hasListeners(topic)).toBe(false);
    }
  });

  it('never checks when it is stopped before it starts, by a signal or a cancellation', async () => {
    const bus = createInProcessBus();
    const reason = new Error('already stopped');
    const cancel = new LazyAbort();
    cancel.abort(reason);
    for (const signal of [AbortSignal.abort(reason), cancel]) {
      let checks = 0;
      await expect(waitFor(bus, topic, () => (checks++, 'never'), signal)).rejects.toBe(reason);
      expect(checks).toBe(0);
      expect(bus.hasListeners(topic)).toBe(false);
    }
  });

  it('ends with the error of a check that fails, and stops following the cancellation', async () => {
    const bus = createInProcessBus();
    const cancel = new LazyAbort();
    const failure = new Error('the database is gone');
    await expect(
      waitFor(bus, topic, () => {
        throw failure;
      }, cancel),
    ).rejects.toBe(failure);
    expect(bus.hasListeners(topic)).toBe(false);
    let heard = 0;
    cancel.addAbortListener(() => (heard += 1));
    cancel.abort(new Error('later'));
    expect(heard).toBe(1);
    expect(cancel.aborted).toBe(true);
  });
});
