import { describe, expect, it, vi } from 'vitest';
import { createInProcessBus, type BusEvent } from '@/lib/tasks/bus';

describe('in-process bus', () => {
  it('keeps a failing listener from stopping the others or the publisher', () => {
    const bus = createInProcessBus();
    const heard: BusEvent[] = [];
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    bus.subscribe('t', () => {
      throw new Error('listener bug');
    });
    bus.subscribe('t', (event) => heard.push(event));
    const event: BusEvent = { type: 'task-deleted', taskId: 'a', userId: 'u' };
    expect(() => bus.publish('t', event)).not.toThrow();
    expect(heard).toEqual([event]);
    expect(logged).toHaveBeenCalledWith('A listener of t failed', expect.any(Error));
    logged.mockRestore();
  });

  it('stops calling a listener once it unsubscribes', () => {
    const bus = createInProcessBus();
    const heard: BusEvent[] = [];
    const unsubscribe = bus.subscribe('t', (event) => heard.push(event));
    bus.publish('t', { type: 'task-deleted', taskId: 'a', userId: 'u' });
    unsubscribe();
    bus.publish('t', { type: 'task-deleted', taskId: 'b', userId: 'u' });
    expect(heard.map((event) => (event as { taskId: string }).taskId)).toEqual(['a']);
  });
});
