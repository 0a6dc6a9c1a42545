import { expect } from 'vitest';
import type { Step } from '@/db/run';

/**
 * The race the notifier's cursor must survive: an event committed by another connection while
 * `pendingEventsOf` is between two of its statements. The program is driven by hand, one statement at
 * a time, on this test's own connection, and the event is written after its first statement.
 */
export async function checkEventCommittedMidRead(database: {
  /** Runs one statement of a program, as the database layer would. */
  execute(step: Step): Promise<unknown> | unknown;
  /** Writes an event and commits it, on another connection; gives its id. */
  insertEvent(userId: string, type: string): Promise<number>;
}): Promise<void> {
  const { getStore } = await import('@/db/client');
  const { pendingEventsOf } = await import('@/db/queries/notifications');
  const store = getStore();
  const q = { db: store.db, t: store.tables, dialect: store.dialect, root: store.db };

  const first = await database.insertEvent('ada', 'task.completed');
  const others = await database.insertEvent('ben', 'task.completed');
  const target = { userId: 'ada', cursor: first, events: ['task.completed' as const] };

  const program = pendingEventsOf.program(q, target, 1);
  let committedMidRead: number | undefined;
  let step = program.next();
  while (!step.done) {
    const value = await database.execute(step.value);
    committedMidRead ??= await database.insertEvent('ada', 'task.completed');
    step = program.next(value);
  }
  const read = step.value;
  expect(committedMidRead).toBeGreaterThan(others);
  // Either it was read, or the cursor stops before it: it is never passed over.
  if (!read.events.some((event) => event.id === committedMidRead)) {
    expect(read.scannedTo).toBeLessThan(committedMidRead!);
    const next = await pendingEventsOf({ ...target, cursor: read.scannedTo }, 1);
    expect(next.events.map((event) => event.id)).toEqual([committedMidRead]);
  }
}
