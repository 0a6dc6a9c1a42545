import { describe, expect, it } from 'vitest';
import { bearerChallenge, parseWwwAuthenticate } from '../helpers/www-authenticate';

describe('the strict WWW-Authenticate parser the OAuth tests use', () => {
  it('reads challenges with auth-params, quoted or not, and a token68', () => {
    expect(parseWwwAuthenticate('Bearer realm="mcp", error=invalid_token, error_description="a \\\\b, c"')).toEqual([
      { scheme: 'bearer', params: { realm: 'mcp', error: 'invalid_token', error_description: 'a \\b, c' } },
    ]);
    expect(parseWwwAuthenticate('Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"')).toEqual([
      { scheme: 'newauth', params: { realm: 'apps', type: '1', title: 'Login to "apps"' } },
      { scheme: 'basic', params: { realm: 'simple' } },
    ]);
    expect(parseWwwAuthenticate('Negotiate abc+/=, Bearer')).toEqual([
      { scheme: 'negotiate', params: {}, token68: 'abc+/=' },
      { scheme: 'bearer', params: {} },
    ]);
  });

  it('refuses a quote inside a quoted-string, a repeated parameter, and stray text', () => {
    for (const header of [
      'Bearer error="insufficient_scope", error_description="does not carry the "mcp" scope", scope="mcp"',
      'Bearer scope="mcp", scope="other"',
      'Bearer realm="mcp" scope="mcp"',
      'Bearer realm="unterminated',
      'Bearer realm=',
      '',
    ]) {
      expect(() => parseWwwAuthenticate(header), header).toThrow();
    }
  });

  it('holds Bearer challenges to RFC 6750: no quote or backslash in error_description, even escaped', () => {
    expect(bearerChallenge('Bearer error="invalid_token", scope="mcp openid"')).toEqual({ error: 'invalid_token', scope: 'mcp openid' });
    expect(() => bearerChallenge('Bearer error_description="the \\"mcp\\" scope"')).toThrow(/RFC 6750/);
    expect(() => bearerChallenge('Bearer scope="mcp  openid"')).toThrow(/scope/);
    expect(() => bearerChallenge('Basic realm="x"')).toThrow(/one Bearer/);
    expect(() => bearerChallenge(null)).toThrow();
  });
});
