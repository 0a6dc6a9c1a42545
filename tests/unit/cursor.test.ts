import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '@/lib/tasks/cursor';

const secret = 'a'.repeat(64);
const position = { createdAt: 1_764_460_800_123, id: '786512e2-9e0d-44bd-8f29-789f320fe840' };

describe('list cursors', () => {
  it('round-trips a position for the same user', () => {
    const cursor = encodeCursor(position, 'user-1', secret);
    expect(decodeCursor(cursor, 'user-1', secret)).toEqual(position);
  });

  it('is opaque: no id or time in clear', () => {
    const cursor = encodeCursor(position, 'user-1', secret);
    expect(cursor).not.toContain(position.id);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it("refuses another user's cursor, a different secret and any tampering", () => {
    const cursor = encodeCursor(position, 'user-1', secret);
    expect(decodeCursor(cursor, 'user-2', secret)).toBeNull();
    expect(decodeCursor(cursor, 'user-1', 'b'.repeat(64))).toBeNull();
    const [payload, signature] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify([position.createdAt + 1, position.id])).toString('base64url');
    expect(decodeCursor(`${forged}.${signature}`, 'user-1', secret)).toBeNull();
    expect(decodeCursor(`${payload}.${signature.slice(1)}`, 'user-1', secret)).toBeNull();
    expect(decodeCursor(`${cursor}.extra`, 'user-1', secret)).toBeNull();
  });

  it('refuses malformed input without throwing', () => {
    for (const bad of ['', '.', 'abc', 'abc.', '.abc', '%%%.###', 'a.b.c']) expect(decodeCursor(bad, 'user-1', secret)).toBeNull();
  });
});
