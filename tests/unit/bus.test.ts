import { describe, expect, it, vi } from 'vitest';
import type { TaskRow } from '@/db/queries/tasks';
import { createInProcessBus, publishTaskEvent, topics, type BusEvent } from '@/lib/tasks/bus';

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

const task = { id: 'task-1', userId: 'user-1' } as TaskRow;

function listen(bus: ReturnType<typeof createInProcessBus>, topic: string): BusEvent['type'][] {
  const heard: BusEvent['type'][] = [];
  bus.subscribe(topic, (event) => heard.push(event.type));
  return heard;
}

describe('publishTaskEvent', () => {
  it("keeps log messages and closed connections from the owner's dashboards, and gives them to the task's followers", () => {
    const bus = createInProcessBus();
    const forTask = listen(bus, topics.task(task.id));
    const forUser = listen(bus, topics.user(task.userId));
    const forSessions = listen(bus, topics.allTasks);
    publishTaskEvent(bus, { type: 'task-log', task, level: 'info', data: 'hello' });
    publishTaskEvent(bus, { type: 'task-stream-close', task });
    publishTaskEvent(bus, { type: 'task-progress', task, progress: 1 });
    expect(forTask).toEqual(['task-log', 'task-stream-close', 'task-progress']);
    expect(forSessions).toEqual(['task-log', 'task-stream-close', 'task-progress']);
    expect(forUser).toEqual(['task-progress']);
  });
});
