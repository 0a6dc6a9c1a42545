/**
 * Where to send someone after signing in. Shared by the sign-in page (server) and the sign-in form
 * (browser) so both apply exactly the same rule: only a path on this origin. Anything a browser could
 * read as another host is refused: `//host` and `/\host` (protocol-relative), dot segments that
 * normalise to `//host` (`/.//host`), their percent-encoded forms, control characters browsers strip
 * (`/\t/host`), absolute URLs to other origins and other schemes (`javascript:`).
 */
export const defaultCallbackPath = '/tasks';
const maxCallbackLength = 2048;

export function safeCallbackPath(value: unknown, origin: string, fallback = defaultCallbackPath): string {
  const candidate = Array.isArray(value) ? value[0] : value;
  if (typeof candidate !== 'string' || !candidate || candidate.length > maxCallbackLength) return fallback;
  if (/[\p{Cc}\\]/u.test(candidate)) return fallback;
  const isPath = candidate.startsWith('/') && !candidate.startsWith('//');
  let url: URL;
  try {
    url = isPath ? new URL(candidate, origin) : new URL(candidate);
  } catch {
    return fallback;
  }
  if (url.origin !== new URL(origin).origin) return fallback;
  if (/^\/[/\\]/.test(url.pathname) || /^\/[/\\]/.test(decodedPath(url.pathname))) return fallback;
  return `${url.pathname}${url.search}${url.hash}`;
}

function decodedPath(pathname: string): string {
  try {
    return decodeURIComponent(pathname);
  } catch {
    return '//';
  }
}
