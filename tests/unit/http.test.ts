import { describe, expect, it } from 'vitest';
import { fromWebRequest } from '@/lib/mcp/http/exchange';
import { accepts, allowedOrigins, requireAllowedOrigin } from '@/lib/mcp/http/replies';

const withHeaders = (headers: Record<string, string>, body?: string) =>
  fromWebRequest(new Request('http://localhost:3000/mcp', { method: body === undefined ? 'GET' : 'POST', headers, body }));

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
  it('allows this server, configured origins and, for a loopback server, any loopback origin', () => {
    const allows = allowedOrigins('http://localhost:3000', ['https://inspector.example']);
    for (const origin of ['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000', 'https://inspector.example', 'http://localhost:6274', 'http://127.0.0.1:5173/']) {
      expect(() => requireAllowedOrigin(withHeaders({ Origin: origin }), allows)).not.toThrow();
    }
    expect(() => requireAllowedOrigin(withHeaders({}), allows)).not.toThrow();
    for (const origin of ['null', 'https://evil.example', 'http://localhost.evil.example:3000', 'file://', 'chrome-extension://abc', 'http://10.0.0.1:3000']) {
      expect(() => requireAllowedOrigin(withHeaders({ Origin: origin }), allows)).toThrow(/origin/);
    }
  });

  it('does not widen a public APP_URL to loopback', () => {
    const allows = allowedOrigins('https://tasks.example.com', []);
    expect(allows('https://tasks.example.com')).toBe(true);
    expect(allows('http://localhost:6274')).toBe(false);
    expect(allows('http://127.0.0.1:3000')).toBe(false);
  });
});

describe('body limit', () => {
  it('reads a body within the limit and refuses one past it', async () => {
    expect(await withHeaders({}, 'héllo').text(6)).toBe('héllo');
    await expect(withHeaders({}, 'x'.repeat(11)).text(10)).rejects.toMatchObject({ status: 413 });
  });
});
