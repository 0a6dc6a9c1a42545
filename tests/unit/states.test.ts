import { describe, expect, it } from 'vitest';
import { canTransition, isTerminal, statusesLeadingTo } from '@/lib/tasks/states';
import { taskStatuses } from '@/db/schema';

describe('the task state machine', () => {
  it('allows exactly the transitions of the spec', () => {
    const allowed = taskStatuses.flatMap((from) => taskStatuses.filter((to) => canTransition(from, to)).map((to) => `${from}->${to}`));
    expect(allowed.sort()).toEqual(
      [
        'working->input_required',
        'working->completed',
        'working->failed',
        'working->cancelled',
        'input_required->working',
        'input_required->completed',
        'input_required->failed',
        'input_required->cancelled',
      ].sort(),
    );
  });

  it('treats completed, failed and cancelled as terminal', () => {
    expect(taskStatuses.filter(isTerminal)).toEqual(['completed', 'failed', 'cancelled']);
  });

  it('derives the WHERE clause of a conditional transition', () => {
    expect(statusesLeadingTo('cancelled')).toEqual(['working', 'input_required']);
    expect(statusesLeadingTo('working')).toEqual(['input_required']);
    expect(statusesLeadingTo('input_required')).toEqual(['working']);
  });
});
