import { describe, expect, it } from 'vitest';
import { newTaskId } from '@/lib/tasks/task-ids';

const version7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The 48-bit time an id starts with, in milliseconds. */
const timeOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
/** The 74 bits after the time, version and variant, as a string of bits. */
function randomBitsOf(id: string): string {
  const bits = [...id.replace(/-/g, '')].map((digit) => parseInt(digit, 16).toString(2).padStart(4, '0')).join('');
  return bits.slice(52, 64) + bits.slice(66);
}

describe('task ids', () => {
  it('are UUIDs of version 7 that start with the time they were made', () => {
    const before = Date.now();
    const id = newTaskId();
    const after = Date.now();
    expect(id).toMatch(version7);
    expect(timeOf(id)).toBeGreaterThanOrEqual(before);
    expect(timeOf(id)).toBeLessThanOrEqual(after);
  });

  it('sort in the order they were made, millisecond by millisecond', async () => {
    const first = newTaskId();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = newTaskId();
    expect(timeOf(second)).toBeGreaterThan(timeOf(first));
    expect([second, first].sort()).toEqual([first, second]);
  });

  it('are random past the time, also within one millisecond: no counter makes a neighbour guessable', () => {
    const ids = Array.from({ length: 20_000 }, newTaskId);
    expect(new Set(ids).size).toBe(ids.length);
    // The millisecond that holds the most ids (the first id's may hold only it, when it was made at its end).
    const byTime = new Map<number, string[]>();
    for (const id of ids) {
      const group = byTime.get(timeOf(id));
      if (group) group.push(id);
      else byTime.set(timeOf(id), [id]);
    }
    const sameMillisecond = [...byTime.values()].reduce((most, group) => (group.length > most.length ? group : most));
    expect(sameMillisecond.length).toBeGreaterThan(1);
    // The first 32 of the 74 bits are where a counter would go: consecutive ids of one millisecond are not one apart.
    const counterOf = (id: string) => parseInt(randomBitsOf(id).slice(0, 32), 2);
    const steps = sameMillisecond.slice(1).map((id, index) => counterOf(id) - counterOf(sameMillisecond[index]));
    expect(steps.filter((step) => step === 1)).toEqual([]);
    // Every random bit takes both values about equally often across the ids.
    const ones = new Array<number>(74).fill(0);
    for (const id of ids) [...randomBitsOf(id)].forEach((bit, position) => (ones[position] += Number(bit)));
    for (const count of ones) expect(Math.abs(count / ids.length - 0.5)).toBeLessThan(0.05);
  });
});
