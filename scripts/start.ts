/**
 * `npm start`: checks the configuration, migrates the database, builds when the build is missing or
 * older than the sources, then runs the production server in the foreground.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '@/db/client';
import { getServerSecret } from '@/lib/auth/secret';
import { ConfigError, getEnv } from '@/lib/env';

const root = path.resolve(__dirname, '..');
const nextBin = path.join(root, 'node_modules', 'next', 'dist', 'bin', 'next');
const sourceEntries = ['app', 'components', 'lib', 'db', 'drizzle', 'public', 'instrumentation.ts', 'next.config.ts', 'package.json', 'postcss.config.mjs', 'tsconfig.json'];

function newestMtime(entry: string): number {
  const full = path.join(root, entry);
  if (!fs.existsSync(full)) return 0;
  const stat = fs.statSync(full);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return fs.readdirSync(full).reduce((newest, child) => Math.max(newest, newestMtime(path.join(entry, child))), stat.mtimeMs);
}

function buildIsCurrent(): boolean {
  const buildId = path.join(root, '.next', 'BUILD_ID');
  if (!fs.existsSync(buildId)) return false;
  const builtAt = fs.statSync(buildId).mtimeMs;
  return sourceEntries.every((entry) => newestMtime(entry) <= builtAt);
}

/** Runs next with the given arguments in the foreground; signals to this process go to it. */
function runNext(args: string[]): Promise<number> {
  const child = spawn(process.execPath, [nextBin, ...args], { cwd: root, stdio: 'inherit', env: process.env });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

async function main(): Promise<void> {
  let env;
  try {
    env = getEnv();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  openDatabase(env.DATABASE_PATH).$client.close();
  process.env.NEXTAUTH_URL ||= env.APP_URL;
  process.env.NEXTAUTH_SECRET ||= getServerSecret();

  if (!buildIsCurrent()) {
    console.log('Building the application (first start or changed sources)...');
    const built = await runNext(['build']);
    if (built !== 0) process.exit(built);
  }

  console.log(`MCP endpoint: ${env.APP_URL}/mcp   database: ${path.resolve(env.DATABASE_PATH)}`);
  // Idle connections outlive clients' own keep-alive (undici: 4 s), so a client never reuses a socket
  // the server is just closing.
  process.exit(await runNext(['start', '--port', String(env.PORT), '--hostname', env.HOST, '--keepAliveTimeout', '65000']));
}

void main();
