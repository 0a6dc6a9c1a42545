/**
 * The dashboard's Content Security Policy. Next.js streams its page data in inline scripts whose
 * content changes per request, so scripts are allowed inline (a nonce would make every page dynamic);
 * everything else is held to this origin. Tool output is shown from data: URLs (images, audio);
 * sign-in may hand the browser over to GitHub or Google. The development server also evaluates code.
 * `formAction` null leaves form submissions (and the redirects after them) unrestricted.
 *
 * JavaScript, not TypeScript: Next.js compiles a next.config.ts with its native compiler every time the
 * server starts, which then stays loaded in the server's process (24 MB of its RSS).
 */
/** @param {string | null} formAction */
const contentSecurityPolicy = (formAction) => [
  "default-src 'self'",
  `script-src 'self' 'unsafe-inline'${process.env.NODE_ENV === 'production' ? '' : " 'unsafe-eval'"}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "media-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  ...(formAction ? [`form-action ${formAction}`] : []),
  "frame-ancestors 'none'",
].join('; ');

/** @param {string} policy */
const withPolicy = (policy) => [
  { key: 'Content-Security-Policy', value: policy },
  { key: 'X-Content-Type-Options', value: 'nosniff' },
  { key: 'X-Frame-Options', value: 'DENY' },
  { key: 'Referrer-Policy', value: 'strict-origin-when-cross-origin' },
];

/** @type {import('next').NextConfig} */
const nextConfig = {
  serverExternalPackages: ['@modelcontextprotocol/sdk', 'better-sqlite3', 'better-sqlite3-napi', 'nodemailer', 'oidc-provider', 'pino', 'rate-limiter-flexible'],
  poweredByHeader: false,
  async headers() {
    return [
      { source: '/:path*', headers: withPolicy(contentSecurityPolicy("'self' https://github.com https://accounts.google.com")) },
      // The consent form posts here and is then redirected to the client's own redirect URI, which can be
      // any host or scheme it registered: browsers hold redirects after a form to form-action too.
      { source: '/consent/:path*', headers: withPolicy(contentSecurityPolicy(null)) },
    ];
  },
};

export default nextConfig;
