const loopbackHosts = new Set(['localhost', '127.0.0.1', '[::1]']);

/** An http loopback URI without its port, or null for any other URI (or one with credentials in it). */
function withoutLoopbackPort(uri: string): string | null {
  const parsed = URL.parse(uri);
  if (!parsed || parsed.protocol !== 'http:' || !loopbackHosts.has(parsed.hostname)) return null;
  if (parsed.username || parsed.password || parsed.hash) return null;
  return `http://${parsed.hostname}${parsed.pathname}${parsed.search}`;
}

/**
 * RFC 8252 section 7.3: a client on the person's own machine listens on whatever port is free, so a
 * loopback redirect URI matches a registered one on any port (same host, path and query). The library
 * does this for clients registered as `native`; most MCP clients register as the default `web`.
 */
export function loopbackRedirectAllowed(value: string, registered: readonly string[]): boolean {
  const requested = withoutLoopbackPort(value);
  return requested !== null && registered.some((uri) => withoutLoopbackPort(uri) === requested);
}
