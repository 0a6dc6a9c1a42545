/**
 * The production server: one Node process that serves `/mcp` with lib/mcp's handler directly and hands
 * every other request to Next's request handler (Next.js custom-server mode). Next's per-request
 * machinery costs milliseconds of CPU; the MCP endpoint, which clients poll, skips it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import next from 'next';
import pg from 'pg';
import { migratePostgres, openDatabase } from '@/db/client';
import { describePostgresError, describePostgresUrl } from '@/db/postgres-copy';
import { normaliseForwardedFor } from '@/lib/auth/client-address';
import { handleOAuthRequest } from '@/lib/auth/oauth/node-handler';
import { resolveServerSecret, SecretConflict } from '@/lib/auth/secret';
import { exitUnlessServersFileFits } from '@/lib/upstreams/config';
import { ConfigError, getEnv } from '@/lib/env';
import { observeMcp } from '@/lib/mcp/http/observe';
import { getRuntime, tasksHandedOver } from '@/lib/runtime';
import { exitUnlessStorageFit } from '@/lib/storage/startup';
import { keepHeapGrowth } from './heap-growth';
import { fromNodeRequest, sendReply } from './node-bridge';

const root = process.cwd();
const nextBin = path.join(root, 'node_modules', 'next', 'dist', 'bin', 'next');
const sourceEntries = ['app', 'components', 'lib', 'db', 'drizzle', 'public', 'instrumentation.ts', 'next.config.mjs', 'package.json', 'postcss.config.mjs', 'tsconfig.json'];

function newestMtime(entry: string): number {
  const full = path.join(root, entry);
  if (!fs.existsSync(full)) return 0;
  const stat = fs.statSync(full);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return fs.readdirSync(full).reduce((newest, child) => Math.max(newest, newestMtime(path.join(entry, child))), stat.mtimeMs);
}

function nextBuildIsCurrent(): boolean {
  const buildId = path.join(root, '.next', 'BUILD_ID');
  if (!fs.existsSync(buildId)) return false;
  const builtAt = fs.statSync(buildId).mtimeMs;
  return sourceEntries.every((entry) => newestMtime(entry) <= builtAt);
}

function runNextBuild(): Promise<number> {
  const child = spawn(process.execPath, [nextBin, 'build'], { cwd: root, stdio: 'inherit', env: process.env });
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

/** A handler that serves some requests itself (true) and leaves the rest to the next one (false). */
type NodeHandler = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

function isPath(req: IncomingMessage, pathname: string): boolean {
  const url = req.url ?? '';
  return url === pathname || url.startsWith(`${pathname}?`);
}

/**
 * Migrates the database before anything serves, so that a database that cannot be reached or migrated
 * stops the start with a message instead of failing the first requests. PostgreSQL is migrated on a
 * connection of its own, closed at once: the runtime opens its pool when it first queries.
 */
async function migrateDatabase(databaseUrl: string | undefined, databasePath: string): Promise<void> {
  if (!databaseUrl) {
    openDatabase(databasePath).$client.close();
    return;
  }
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    await migratePostgres(pool);
  } catch (error) {
    console.error(`Could not migrate the PostgreSQL database ${describePostgresUrl(new URL(databaseUrl))}: ${describePostgresError(error)}`);
    process.exit(1);
  } finally {
    await pool.end();
  }
}

/**
 * The signing secret, settled before anything serves: an instance whose secret differs from the running
 * instances' would reject their sessions and cursors, so it stops with one line saying what to do.
 */
async function settleSecret(databaseUrl: string | undefined): Promise<string> {
  try {
    return await resolveServerSecret();
  } catch (error) {
    if (error instanceof SecretConflict) console.error(error.message);
    else if (databaseUrl) console.error(`Could not settle the signing secret with the PostgreSQL database ${describePostgresUrl(new URL(databaseUrl))}: ${describePostgresError(error)}`);
    else throw error;
    process.exit(1);
  }
}

/** Where Next 16 keeps its preload of pages and routes behind the custom-server wrapper (private fields). */
interface Preloading {
  server?: { server?: { unstable_preloadEntries?: () => Promise<void> } };
}

/**
 * Loads every page and route before the server listens. Next starts the same preload once prepared but
 * does not wait for it; running it again here takes what is already loaded from the module cache and
 * waits for the rest. False where this version of Next keeps it elsewhere.
 */
async function entriesLoaded(app: ReturnType<typeof next>): Promise<boolean> {
  const server = (app as unknown as Preloading).server?.server;
  if (typeof server?.unstable_preloadEntries !== 'function') return false;
  await server.unstable_preloadEntries();
  return true;
}

export async function main({ dev = false } = {}): Promise<void> {
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
  keepHeapGrowth(env.HEAP_GROWTH_PERCENT);
  exitUnlessStorageFit();
  exitUnlessServersFileFits(env.MCP_SERVERS_FILE);
  await migrateDatabase(env.DATABASE_URL, env.DATABASE_PATH);
  process.env.NEXTAUTH_URL ||= env.APP_URL;
  const secret = await settleSecret(env.DATABASE_URL);
  process.env.NEXTAUTH_SECRET ||= secret;

  if (!dev && !nextBuildIsCurrent()) {
    console.log('Building the application (first start or changed sources)...');
    const built = await runNextBuild();
    if (built !== 0) process.exit(built);
  }

  // The runtime (engine, recovery, sweeper) starts before Next, whose instrumentation then finds it.
  const { mcp } = getRuntime();
  const app = next({ dev, dir: root, hostname: env.HOST, port: env.PORT });
  await app.prepare();
  // Once prepared, Next loads every page and route in the background, and a request that comes meanwhile
  // shares the CPU with all of it: seconds when several instances start together on a small machine,
  // longer than a load balancer's health check gives an instance. Listening once they are loaded makes a
  // started server a ready one. (The development server compiles pages on demand instead.)
  if (!dev && !(await entriesLoaded(app))) console.warn('Pages and routes load on their first request: this version of Next.js keeps its preload elsewhere.');
  const handleNext = app.getRequestHandler();

  const serveMcp: NodeHandler = async (req, res) => {
    if (!isPath(req, '/mcp')) return false;
    sendReply(await observeMcp(fromNodeRequest(req, res), mcp), res);
    return true;
  };
  // The authorization server and its discovery documents (oidc-provider needs the raw Node request).
  const handlers: NodeHandler[] = [serveMcp, handleOAuthRequest];

  const server = http.createServer(async (req, res) => {
    // Sign-in throttles count per client address, read from X-Forwarded-For: no client may write its own.
    normaliseForwardedFor(req, env.trustProxy);
    try {
      for (const handler of handlers) if (await handler(req, res)) return;
      await handleNext(req, res);
    } catch (error) {
      console.error('Request failed', error);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end('Internal Server Error');
    }
  });
  // Idle connections outlive clients' own keep-alive (undici: 4 s), so a client never reuses a socket
  // the server is just closing.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // Thousands of clients may connect at once (each blocked on tasks/result holds a connection): a
  // long accept queue keeps a burst from being dropped (the kernel caps it at net.core.somaxconn).
  await new Promise<void>((resolve) => server.listen({ port: env.PORT, host: env.HOST, backlog: 65_535 }, resolve));
  const database = env.DATABASE_URL ? describePostgresUrl(new URL(env.DATABASE_URL)) : path.resolve(env.DATABASE_PATH);
  console.log(`MCP endpoint: ${env.APP_URL}/mcp   database: ${database}`);

  // The runtime's own SIGTERM/SIGINT listeners end streams and waits first; then open requests drain.
  const shutdown = () => {
    // Exit once open requests are done and the running tasks are handed to another instance.
    server.close(() => void tasksHandedOver().finally(() => process.exit(0)));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 10_000).unref();
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}
