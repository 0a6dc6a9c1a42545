import { describe, expect, it } from 'vitest';
import type { TaskRow } from '@/db/queries/tasks';
import { createInProcessBus, publishTaskEvent, topics, type BusEvent } from '@/lib/tasks/bus';

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
