import type { NextConfig } from 'next';

const nextConfig: NextConfig = {
  serverExternalPackages: ['better-sqlite3', 'pino', 'rate-limiter-flexible'],
  poweredByHeader: false,
};

export default nextConfig;
