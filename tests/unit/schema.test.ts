import { describe, expect, it } from 'vitest';
import { maxJsonDepth, nestsDeeperThan } from '@/lib/mcp/schema';

const nestedArrays = (depth: number) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);

describe('message depth', () => {
  it('allows messages up to the limit and refuses deeper ones', () => {
    expect(nestsDeeperThan(nestedArrays(maxJsonDepth), maxJsonDepth)).toBe(false);
    expect(nestsDeeperThan(nestedArrays(maxJsonDepth + 1), maxJsonDepth)).toBe(true);
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
