import { describe, expect, it } from 'vitest';
import { classifyMessage, maxJsonDepth, nestsDeeperThan, requestIdOf } from '@/lib/mcp/core/schema';

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

describe('reading a message once', () => {
  it("gives a request's id and null for anything else, and classifies the message the same way afterwards", () => {
    const request = { jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { taskId: 't' } };
    expect(requestIdOf(request)).toBe(7);
    const incoming = classifyMessage(request);
    expect(incoming).toMatchObject({ kind: 'request', message: { id: 7, method: 'tasks/get' } });
    expect(classifyMessage(request)).toBe(incoming);
    expect(requestIdOf({ jsonrpc: '2.0', id: 'a', method: 'ping' })).toBe('a');

    expect(requestIdOf({ jsonrpc: '2.0', method: 'notifications/initialized' })).toBeNull();
    expect(requestIdOf({ jsonrpc: '2.0', id: 1, result: {} })).toBeNull();
    expect(requestIdOf([request])).toBeNull();
    expect(requestIdOf('text')).toBeNull();
    expect(requestIdOf(null)).toBeNull();
    // Not a request: a fractional id, a method that is no string, a wrong jsonrpc. Each is still refused when classified.
    for (const bad of [
      { jsonrpc: '2.0', id: 1.5, method: 'ping' },
      { jsonrpc: '2.0', id: 1, method: 42 },
      { jsonrpc: '1.0', id: 1, method: 'ping' },
    ]) {
      expect(requestIdOf(bad)).toBeNull();
      expect(() => classifyMessage(bad)).toThrow(/Invalid Request/);
    }
  });
});
