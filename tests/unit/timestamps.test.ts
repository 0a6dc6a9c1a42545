import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTimestamp } from '@/lib/mcp/core/timestamps';

/** A task's timestamps are written without a Date per value: they must read exactly as toISOString writes them. */
describe('isoTimestamp', () => {
  it('writes every time a Date can hold as toISOString does', () => {
    const maxTime = 8.64e15;
    fc.assert(
      fc.property(fc.double({ min: -maxTime, max: maxTime, noNaN: true }), (time) => {
        expect(isoTimestamp(time)).toBe(new Date(time).toISOString());
      }),
      { numRuns: 20_000 },
    );
  });

  it('is right around the edges of a day, a leap day and the epoch, one after another', () => {
    const times = [0, -1, 1, 86_399_999, 86_400_000, -86_400_000, -86_400_001, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2024, 2, 1), Date.UTC(1969, 11, 31, 23, 59, 59, 999), Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), 1_733_480_000_123];
    for (const time of [...times, ...times.reverse()]) expect(isoTimestamp(time)).toBe(new Date(time).toISOString());
  });

  it('throws as a Date does for a time no Date can hold', () => {
    for (const time of [Number.NaN, Number.POSITIVE_INFINITY, 8.64e15 + 1]) expect(() => isoTimestamp(time)).toThrow(RangeError);
  });
});
