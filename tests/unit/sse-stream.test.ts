import { afterEach, describe, expect, it, vi } from 'vitest';
import { SseStream } from '@/lib/mcp/http/sse';

describe('an event stream closing', () => {
  afterEach(() => vi.restoreAllMocks());

  it('runs each close listener once, in order, whether this side closes it or the client goes', () => {
    for (const end of ['close', 'abandon'] as const) {
      const stream = new SseStream();
      const order: string[] = [];
      stream.onClose(() => order.push('first'));
      stream.onClose(() => order.push('second'));
      expect(stream.closed).toBe(false);
      stream[end]();
      stream.close();
      stream.abandon();
      expect(stream.closed).toBe(true);
      expect(order).toEqual(['first', 'second']);
    }
  });

  it('runs a listener added after the close at once, and the others even when one throws', () => {
    const failures = vi.spyOn(console, 'error').mockImplementation(() => {});
    const stream = new SseStream();
    const ran: string[] = [];
    stream.onClose(() => {
      throw new Error('listener broke');
    });
    stream.onClose(() => ran.push('after the failing one'));
    stream.close();
    expect(ran).toEqual(['after the failing one']);
    expect(failures).toHaveBeenCalledTimes(1);
    stream.onClose(() => ran.push('late'));
    expect(ran).toEqual(['after the failing one', 'late']);
  });

  it('gives an AbortSignal that aborts with the stream, made only when asked for', () => {
    const open = new SseStream();
    const signal = open.signal;
    expect(open.signal).toBe(signal);
    expect(signal.aborted).toBe(false);
    open.abandon();
    expect(signal.aborted).toBe(true);
    const closed = new SseStream();
    closed.close();
    expect(closed.signal.aborted).toBe(true);
  });

  it('ends its sink once, writes nothing after the close, and writes what came before the sink attached', () => {
    const stream = new SseStream();
    stream.send({ jsonrpc: '2.0', method: 'ping' }, 7);
    const written: string[] = [];
    let ended = 0;
    stream.attach({ write: (chunk) => written.push(chunk), end: () => (ended += 1) });
    stream.close();
    stream.send({ jsonrpc: '2.0', method: 'late' });
    stream.close();
    expect(ended).toBe(1);
    expect(written).toEqual([': stream open\n\n', 'id: 7\ndata: {"jsonrpc":"2.0","method":"ping"}\n\n']);
  });
});

describe('keeping event streams alive', () => {
  afterEach(() => vi.useRealTimers());

  it('writes a comment to every open stream of a period each period, none after a stream closes, with one timer for them all', () => {
    vi.useFakeTimers();
    const written = (stream: SseStream) => {
      const chunks: string[] = [];
      stream.attach({ write: (chunk) => chunks.push(chunk), end: () => {} });
      return chunks;
    };
    const timersBefore = vi.getTimerCount();
    const first = new SseStream(1000);
    const second = new SseStream(1000);
    const other = new SseStream(5000);
    expect(vi.getTimerCount() - timersBefore).toBe(2);
    const [a, b, c] = [written(first), written(second), written(other)];
    vi.advanceTimersByTime(1000);
    expect(a.filter((chunk) => chunk === ': keep-alive\n\n')).toHaveLength(1);
    expect(b.filter((chunk) => chunk === ': keep-alive\n\n')).toHaveLength(1);
    expect(c.filter((chunk) => chunk === ': keep-alive\n\n')).toHaveLength(0);
    second.close();
    vi.advanceTimersByTime(4000);
    expect(a.filter((chunk) => chunk === ': keep-alive\n\n')).toHaveLength(5);
    expect(b.filter((chunk) => chunk === ': keep-alive\n\n')).toHaveLength(1);
    expect(c.filter((chunk) => chunk === ': keep-alive\n\n')).toHaveLength(1);
    first.abandon();
    other.close();
    // The last stream of a period takes its timer with it.
    expect(vi.getTimerCount()).toBe(timersBefore);
  });

  it('calls streamClosed on a listener object when the stream closes, or at once when it has', () => {
    const closedOnes: string[] = [];
    const listener = (name: string) => ({ streamClosed: () => closedOnes.push(name) });
    const stream = new SseStream();
    stream.onClose(listener('before'));
    stream.close();
    stream.onClose(listener('after'));
    expect(closedOnes).toEqual(['before', 'after']);
  });
});
