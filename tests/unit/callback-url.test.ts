import { describe, expect, it } from 'vitest';
import { safeCallbackPath } from '@/lib/auth/callback-url';

const origin = 'http://localhost:3000';

describe('the path to return to after sign-in', () => {
  it.each([
    ['/tasks?status=working', '/tasks?status=working'],
    ['/oauth/auth/abc?x=y', '/oauth/auth/abc?x=y'],
    ['/tasks/123#questions', '/tasks/123#questions'],
    ['http://localhost:3000/inbox?a=1', '/inbox?a=1'],
    ['/a/../tokens', '/tokens'],
  ])('keeps the same-origin path %s', (value, expected) => {
    expect(safeCallbackPath(value, origin)).toBe(expected);
  });

  it.each([
    '/.//evil.com',
    '/./../..//evil.com/x',
    '//evil.com',
    '///evil.com',
    '/\\evil.com',
    '\\\\evil.com',
    '/%2F%2Fevil.com',
    '/%2f%5Cevil.com',
    '/%5C%5Cevil.com',
    '/\t/evil.com',
    '/\n/evil.com',
    'https://evil.com/tasks',
    'http://localhost:3001/tasks',
    'https://localhost:3000/tasks',
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    'data:text/html,hi',
    'evil.com',
    '',
    'x'.repeat(5000),
  ])('refuses %j and returns to the dashboard', (value) => {
    expect(safeCallbackPath(value, origin)).toBe('/tasks');
  });

  it('takes the first of repeated parameters and ignores non-strings', () => {
    expect(safeCallbackPath(['/inbox', '//evil.com'], origin)).toBe('/inbox');
    expect(safeCallbackPath(['//evil.com', '/inbox'], origin)).toBe('/tasks');
    expect(safeCallbackPath(undefined, origin)).toBe('/tasks');
    expect(safeCallbackPath(42, origin, '/connect')).toBe('/connect');
  });
});
