import { describe, expect, it } from 'vitest';
import { accepts, allowedOrigins, readBodyWithLimit, requireAllowedOrigin } from '@/lib/mcp/http';

const withHeaders = (headers: Record<string, string>, body?: string) =>
  new Request('http://localhost:3000/mcp', { method: body === undefined ? 'GET' : 'POST', headers, body });

describe('Accept negotiation', () => {
  it('reads media types with parameters, q-values and wildcards', () => {
    const request = withHeaders({ Accept: 'application/json;q=0.9, text/event-stream' });
    expect(accepts(request, 'application/json')).toBe(true);
    expect(accepts(request, 'text/event-stream')).toBe(true);
    expect(accepts(withHeaders({ Accept: '*/*' }), 'text/event-stream')).toBe(true);
    expect(accepts(withHeaders({ Accept: 'text/*' }), 'application/json')).toBe(false);
    expect(accepts(withHeaders({}), 'application/json')).toBe(false);
  });
});

describe('Origin checks', () => {
  it('allows this server and its loopback aliases, and configured origins', () => {
    const allowed = allowedOrigins('http://localhost:3000', ['https://inspector.example']);
    expect([...allowed].sort()).toEqual(
      ['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000', 'https://inspector.example'].sort(),
    );
    expect(() => requireAllowedOrigin(withHeaders({ Origin: 'http://127.0.0.1:3000' }), allowed)).not.toThrow();
    expect(() => requireAllowedOrigin(withHeaders({}), allowed)).not.toThrow();
    expect(() => requireAllowedOrigin(withHeaders({ Origin: 'http://localhost:3001' }), allowed)).toThrow(/origin/);
    expect(() => requireAllowedOrigin(withHeaders({ Origin: 'null' }), allowed)).toThrow(/origin/);
  });

  it('does not widen a public APP_URL to loopback', () => {
    expect([...allowedOrigins('https://tasks.example.com', [])]).toEqual(['https://tasks.example.com']);
  });
});

describe('body limit', () => {
  it('reads a body within the limit and refuses one past it', async () => {
    expect(await readBodyWithLimit(withHeaders({}, 'héllo'), 6)).toBe('héllo');
    await expect(readBodyWithLimit(withHeaders({}, 'x'.repeat(11)), 10)).rejects.toMatchObject({ status: 413 });
  });
});
