import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Database from '@/db/sqlite';
import { createTestDatabase, type TestDatabase } from './postgres';
import { openSyncPostgres, type SyncDatabase } from './sync-postgres';

const root = path.resolve(__dirname, '..', '..');
const tsxCli = path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface TestServer {
  url: string;
  mcpUrl: string;
  dataDir: string;
  dbPath: string;
  env: Record<string, string>;
  /** What the server wrote to stdout and stderr (the latest 32 Mi characters of it). */
  output(): string;
  /** The server process's pid, which is also its process group id. */
  pid(): number;
  /** Stops the whole process group gracefully. */
  stop(): Promise<void>;
  /** SIGKILLs the whole process group: nothing gets to clean up. */
  kill9(): Promise<void>;
  /** Starts a new server process on the same port and database. */
  restart(): Promise<void>;
  /**
   * A direct connection to the server's database (its SQLite file, or its PostgreSQL database in the
   * PostgreSQL pass), for setting up and checking state.
   */
  db(): SyncDatabase;
}

/**
 * Which database the servers of this run use: the SQLite file (the default), or, with
 * MCP_TEST_DATABASE=postgres, a fresh PostgreSQL database per server on the server TEST_DATABASE_URL
 * names (the test runner starts an embedded one when none is named).
 */
export const testDatabase = process.env.MCP_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * Which mount serves /mcp: `npm start`'s production server, or, with MCP_TEST_MOUNT=route-handler,
 * Next's own server (`next start`), where app/mcp/route.ts serves it. Both run the built app.
 */
export const testMount = process.env.MCP_TEST_MOUNT === 'route-handler' ? 'route-handler' : 'production-server';

export type TestMount = typeof testMount;

/** How much of a server's output `output()` keeps: its latest characters. */
const outputKeptChars = 32 * 1024 * 1024;

/** What `npm start` gives node (package.json's start script, less `node`): the same V8 flags, the same script. */
const npmStartArgs = (() => {
  const command: string = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
  const [program, ...args] = command.split(/\s+/);
  if (program !== 'node') throw new Error(`package.json's start script does not run node: ${command}`);
  return args;
})();

function serverCommand(port: number, mount: TestMount): string[] {
  if (mount === 'production-server') return npmStartArgs;
  // Idle connections kept as long as npm start's server keeps them (server/main.ts): with Next's default,
  // a client's pooled connection can be closed by the server just as the client reuses it.
  return [path.join(root, 'node_modules', 'next', 'dist', 'bin', 'next'), 'start', '--port', String(port), '--hostname', '127.0.0.1', '--keepAliveTimeout', '65000'];
}

/**
 * Runs the built app on a free loopback port with a fresh database, on the mount under test unless
 * the test is about one mount's own behaviour.
 */
export async function startServer(extraEnv: Record<string, string> = {}, mount: TestMount = testMount): Promise<TestServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-task-server-'));
  const port = await freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_PATH: path.join(dataDir, 'app.db'),
    NEXT_TELEMETRY_DISABLED: '1',
    // npm start sets this itself; next start needs it from the environment.
    NEXTAUTH_URL: `http://localhost:${port}`,
    ...extraEnv,
  };
  let postgres: TestDatabase | undefined;
  if (testDatabase === 'postgres' && !('DATABASE_URL' in extraEnv)) {
    postgres = await createTestDatabase();
    env.DATABASE_URL = postgres.url;
    // Files run side by side, some with several servers: keep well inside the server's max_connections.
    env.DATABASE_POOL_SIZE ??= '4';
  }
  const url = `http://localhost:${port}`;
  let child: ChildProcess | undefined;
  let log = '';
  let connection: SyncDatabase | undefined;
  // A test's server writes far less than this; a benchmark's logs a line per request, millions of them,
  // past the longest string V8 can make: of that, the latest part is kept.
  const keepOutput = (chunk: Buffer) => {
    log += chunk;
    if (log.length > 2 * outputKeptChars) log = log.slice(-outputKeptChars);
  };

  const launch = async () => {
    log = '';
    child = spawn(process.execPath, serverCommand(port, mount), {
      cwd: root,
      env: { ...process.env, ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', keepOutput);
    child.stderr!.on('data', keepOutput);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${log}`);
      try {
        const response = await fetch(`${url}/mcp`, { method: 'POST' });
        if (response.status === 401) return;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) throw new Error(`server did not start:\n${log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  const signalGroup = async (signal: NodeJS.Signals) => {
    const current = child;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    const exited = new Promise((resolve) => current.once('exit', resolve));
    try {
      process.kill(-current.pid!, signal);
    } catch {
      return;
    }
    // next start lets idle keep-alive connections (kept up to --keepAliveTimeout) run out before it exits:
    // a client that keeps one open could hold a stop for a minute. Past a few seconds, it is killed.
    const killAfterWaiting = () => {
      try {
        process.kill(-current.pid!, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    };
    const patience = mount === 'route-handler' && signal === 'SIGTERM' ? setTimeout(killAfterWaiting, 10_000) : undefined;
    await exited;
    clearTimeout(patience);
    // The group's other members (next's own child) go with the signal; wait until the port is free.
    for (let i = 0; i < 100; i += 1) {
      const inUse = await new Promise<boolean>((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        socket.once('connect', () => (socket.destroy(), resolve(true)));
        socket.once('error', () => resolve(false));
      });
      if (!inUse) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  try {
    await launch();
  } catch (error) {
    await signalGroup('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
    await postgres?.drop();
    throw error;
  }
  return {
    url,
    mcpUrl: `${url}/mcp`,
    dataDir,
    dbPath: env.DATABASE_PATH,
    env,
    output: () => log,
    pid: () => child!.pid!,
    stop: async () => {
      connection?.close();
      connection = undefined;
      await signalGroup('SIGTERM');
      fs.rmSync(dataDir, { recursive: true, force: true });
      await postgres?.drop();
    },
    kill9: () => signalGroup('SIGKILL'),
    restart: async () => {
      await signalGroup('SIGTERM');
      await launch();
    },
    db: () => {
      connection ??= env.DATABASE_URL ? openSyncPostgres(env.DATABASE_URL) : new Database(env.DATABASE_PATH);
      return connection;
    },
  };
}

/** Runs the real token CLI against the server's database and returns the printed token. */
export function createToken(server: TestServer, email: string, name = 'test'): string {
  const result = spawnSync(process.execPath, [tsxCli, 'scripts/token.ts', 'create', '--email', email, '--name', name], {
    cwd: root,
    env: { ...process.env, ...server.env },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`token:create failed: ${result.stderr}`);
  return result.stdout.trim();
}

/** Runs the real token:revoke CLI, giving it the token on standard input (or with --token, when asked). */
export function revokeToken(server: TestServer, token: string, via: 'stdin' | 'argument' = 'stdin'): { status: number | null; stderr: string } {
  const args = via === 'argument' ? ['--token', token] : [];
  const result = spawnSync(process.execPath, [tsxCli, 'scripts/token.ts', 'revoke', ...args], {
    cwd: root,
    env: { ...process.env, ...server.env },
    input: via === 'stdin' ? `${token}\n` : '',
    encoding: 'utf8',
  });
  return { status: result.status, stderr: result.stderr };
}

export const shiftedClockPreload = path.join(root, 'tests', 'helpers', 'shifted-clock.cjs');

/**
 * The environment that starts a server whose clock `advanceClock` moves (see shifted-clock.cjs). The
 * offset file is written by the first advance; remove it with the server.
 */
export function shiftedClockEnv(): Record<string, string> {
  const offsetFile = path.join(os.tmpdir(), `mcp-clock-${process.pid}-${Date.now()}.offset`);
  return { NODE_OPTIONS: `--require ${shiftedClockPreload}`, CLOCK_OFFSET_FILE: offsetFile };
}

/** The numbers a server's preload has printed in lines matching `report` (one capture group), in order. */
function reportedNumbers(server: TestServer, report: RegExp): number[] {
  return [...server.output().matchAll(report)].map((match) => Number(match[1]));
}

/**
 * Sends SIGUSR2 to a server started with a test preload (shifted-clock.cjs, heap-after-gc.cjs) and
 * resolves with the number in the next line it prints that matches `report`.
 */
async function signalForReport(server: TestServer, report: RegExp, what: string): Promise<number> {
  const before = reportedNumbers(server, report).length;
  process.kill(server.pid(), 'SIGUSR2');
  for (let waited = 0; reportedNumbers(server, report).length === before; waited += 1) {
    if (waited > 400) throw new Error(`${what}: ${server.output().slice(-500)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return reportedNumbers(server, report).at(-1)!;
}

const clockReport = /clock offset (\d+) ms\n/g;

/** Moves the clock of a server started with `shiftedClockEnv()` forward, and waits until it says so. */
export async function advanceClock(server: TestServer, byMs: number): Promise<void> {
  const target = (reportedNumbers(server, clockReport).at(-1) ?? 0) + byMs;
  fs.writeFileSync(server.env.CLOCK_OFFSET_FILE, String(target));
  const moved = await signalForReport(server, clockReport, "the server's clock did not move");
  if (moved !== target) throw new Error(`the server's clock moved to ${moved} ms, not ${target} ms`);
}

const heapAfterGcPreload = path.join(root, 'tests', 'helpers', 'heap-after-gc.cjs');

/** The environment that starts a server `heapAfterGcKib` can read (see heap-after-gc.cjs); not with `shiftedClockEnv()`. */
export function heapAfterGcEnv(): Record<string, string> {
  return { NODE_OPTIONS: `--require ${heapAfterGcPreload}` };
}

/** The heap and external memory a server started with `heapAfterGcEnv()` still uses once all its garbage is collected, in KiB. */
export function heapAfterGcKib(server: TestServer): Promise<number> {
  return signalForReport(server, /heap after gc (\d+) KiB\n/g, 'the server did not report its heap');
}

/** The size of V8's young generation (its new space) in a server started with `heapAfterGcEnv()`, in KiB. */
export function youngGenerationKib(server: TestServer): Promise<number> {
  return signalForReport(server, /young generation (\d+) KiB\n/g, 'the server did not report its young generation');
}

/** Runs one of the project's command-line scripts (scripts/<name>.ts) against the server's database. */
export function runScript(server: TestServer, script: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [tsxCli, `scripts/${script}.ts`, ...args], {
    cwd: root,
    env: { ...process.env, ...server.env },
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
