import type { TaskStatus } from '@/db/schema';

export type { TaskStatus };

/** The spec's state machine: which states each state may move to. Terminal states move nowhere. */
const transitions: Record<TaskStatus, readonly TaskStatus[]> = {
  working: ['input_required', 'completed', 'failed', 'cancelled'],
  input_required: ['working', 'completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

export const activeStatuses = ['working', 'input_required'] as const satisfies readonly TaskStatus[];

export function isTerminal(status: TaskStatus): boolean {
  return transitions[status].length === 0;
}

export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return transitions[from].includes(to);
}

/** The states from which `to` may be reached: the WHERE clause of a conditional transition. */
export function statusesLeadingTo(to: TaskStatus): TaskStatus[] {
  return (Object.keys(transitions) as TaskStatus[]).filter((from) => canTransition(from, to));
}
