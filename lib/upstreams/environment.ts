/**
 * What a stdio server inherits from this server's environment: only what programs need to run (where to
 * find commands, a home for caches such as npx's, the locale, the time zone, where temporary files go,
 * proxies and extra CA certificates for reaching the network). Never this server's own secrets
 * (AUTH_SECRET, DATABASE_URL, SMTP_URL, VAPID keys, OAuth client secrets): its entry's `env` gives it
 * what else it needs.
 */
const inherited = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  // npm and npx find their registry and cache through these.
  'npm_config_registry',
  'npm_config_cache',
  'NPM_CONFIG_REGISTRY',
  'NPM_CONFIG_CACHE',
] as const;

export function minimalEnvironment(source: Readonly<Record<string, string | undefined>> = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of inherited) {
    const value = source[name];
    // A value starting with "()" is a shell function: never passed on (as sudo does).
    if (value !== undefined && !value.startsWith('()')) env[name] = value;
  }
  return env;
}
