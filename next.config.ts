import type { NextConfig } from 'next';

/**
 * The dashboard's Content Security Policy. Next.js streams its page data in inline scripts whose
 * content changes per request, so scripts are allowed inline (a nonce would make every page dynamic);
 * everything else is held to this origin. Tool output is shown from data: URLs (images, audio);
 * sign-in may hand the browser over to GitHub or Google. The development server also evaluates code.
 */
const contentSecurityPolicy = [
  "default-src 'self'",
  `script-src 'self' 'unsafe-inline'${process.env.NODE_ENV === 'production' ? '' : " 'unsafe-eval'"}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "media-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self' https://github.com https://accounts.google.com",
  "frame-ancestors 'none'",
].join('; ');

const securityHeaders = [
  { key: 'Content-Security-Policy', value: contentSecurityPolicy },
  { key: 'X-Content-Type-Options', value: 'nosniff' },
  { key: 'X-Frame-Options', value: 'DENY' },
  { key: 'Referrer-Policy', value: 'strict-origin-when-cross-origin' },
];

const nextConfig: NextConfig = {
  serverExternalPackages: ['better-sqlite3', 'oidc-provider', 'pino', 'rate-limiter-flexible'],
  poweredByHeader: false,
  async headers() {
    return [{ source: '/:path*', headers: securityHeaders }];
  },
};

export default nextConfig;
