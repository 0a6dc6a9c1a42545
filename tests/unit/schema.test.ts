import { describe, expect, it } from 'vitest';
import { maxJsonDepth, nestsDeeperThan } from '@/lib/mcp/core/schema';

const nestedArrays = (depth: number) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);

describe('message depth', () => {
  it('allows messages up to the limit and refuses deeper ones', () => {
    // The README's 64 levels, not the constant itself: a changed constant must show here.
    expect(maxJsonDepth).toBe(64);
    expect(nestsDeeperThan(nestedArrays(64), maxJsonDepth)).toBe(false);
    expect(nestsDeeperThan(nestedArrays(65), maxJsonDepth)).toBe(true);
    expect(nestsDeeperThan({ a: [{ b: 1 }], c: 'text' }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(nestsDeeperThan('plain', 0)).toBe(false);
  });

  it('measures values far too deep to write back without overflowing the stack', () => {
    const deep = nestedArrays(200_000);
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(nestsDeeperThan(deep, maxJsonDepth)).toBe(true);
  });
});
