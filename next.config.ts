import type { NextConfig } from 'next';

const nextConfig: NextConfig = {
  serverExternalPackages: ['better-sqlite3', 'oidc-provider'],
  poweredByHeader: false,
};

export default nextConfig;
