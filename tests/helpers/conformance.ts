import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBearerProxy } from './bearer-proxy';
import { createToken, startServer } from './server';

/**
 * The official MCP conformance suite, in the versions tests/conformance pins (its own package.json and
 * lock file, with the Node 22 the suite needs), installed there with `npm ci` when missing or older than
 * the lock file, and run on that Node: a run resolves nothing anew.
 */
export const suiteDir = path.resolve(__dirname, '..', 'conformance');
export const suiteBin = path.join(suiteDir, 'node_modules', '.bin');
export const suiteManifest = JSON.parse(fs.readFileSync(path.join(suiteDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
/** Long enough for a first install to download Node 22 (about 30 MB) on a slow link. */
export const installTimeoutMs = 5 * 60_000;
export const suiteTimeoutMs = 8 * 60_000;

/** The installed packages of the two suites: the 2025-11-25 one, and the 2026-07-28 one under an npm alias. */
export const suitePackages = { legacy: '@modelcontextprotocol/conformance', modern: 'conformance-2026' } as const;

export function installedSuiteVersion(which: keyof typeof suitePackages): string {
  return (JSON.parse(fs.readFileSync(path.join(suiteDir, 'node_modules', suitePackages[which], 'package.json'), 'utf8')) as { version: string }).version;
}

/** Installs tests/conformance from its lock file, unless the install is already that of the current lock file. */
export function installSuite(): void {
  const installedLock = path.join(suiteDir, 'node_modules', '.package-lock.json');
  const current =
    fs.existsSync(installedLock) &&
    fs.existsSync(path.join(suiteBin, 'node')) &&
    fs.statSync(installedLock).mtimeMs >= fs.statSync(path.join(suiteDir, 'package-lock.json')).mtimeMs;
  if (current) return;
  const install = spawnSync('npm', ['ci', '--prefix', suiteDir, '--no-audit', '--no-fund', '--loglevel=error'], {
    encoding: 'utf8',
    timeout: installTimeoutMs,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  if (install.status !== 0) {
    throw new Error(
      `npm ci --prefix tests/conformance failed (status ${install.status}${install.error ? `, ${install.error.message}` : ''}): it needs the npm registry ` +
        `within ${installTimeoutMs / 60_000} minutes the first time. Its output:\n${(install.stdout + install.stderr).slice(-4000)}`,
    );
  }
}

/** The scenarios a YAML baseline lists under `server:`, each with the reason its comment gives. */
export function readExpectedFailures(file: string): Map<string, string> {
  const listed = new Map<string, string>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const entry = /^\s+-\s+([a-z0-9-]+)\s*(?:#\s*(.*))?$/.exec(line);
    if (entry) listed.set(entry[1], entry[2]?.trim() ?? '');
  }
  return listed;
}

export interface Check {
  id: string;
  name: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

export interface SuiteRun {
  exitCode: number | null;
  output: string;
  checksByScenario: Map<string, Check[]>;
}

/**
 * Runs one suite's server scenarios once (`args` after `server --url <url>`), on tests/conformance's Node;
 * resolves when it exits (or is stopped at the time limit) with every scenario's checks.
 */
export function runSuite(which: keyof typeof suitePackages, url: string, args: string[], outputDir: string): Promise<SuiteRun> {
  const entry = path.join(suiteDir, 'node_modules', suitePackages[which], 'dist', 'index.js');
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(suiteBin, 'node'), [entry, 'server', '--url', url, ...args, '--output-dir', outputDir], {
      // Whatever the suite starts runs on the same Node 22.
      env: { ...process.env, PATH: `${suiteBin}${path.delimiter}${process.env.PATH}`, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), suiteTimeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`Could not start the conformance suite on tests/conformance's Node: ${error.message}`));
    });
    child.once('close', (exitCode) => {
      clearTimeout(timer);
      const checksByScenario = new Map<string, Check[]>();
      // Each scenario writes server-<scenario>-<timestamp>/checks.json.
      for (const dir of fs.readdirSync(outputDir)) {
        const named = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+(?:\.\d+)?Z?$/.exec(dir);
        const file = path.join(outputDir, dir, 'checks.json');
        if (named && fs.existsSync(file)) checksByScenario.set(named[1], JSON.parse(fs.readFileSync(file, 'utf8')));
      }
      if (checksByScenario.size === 0) {
        reject(new Error(`The conformance suite did not run (exit code ${exitCode}). Its output:\n${output.slice(-4000)}`));
        return;
      }
      resolve({ exitCode, output, checksByScenario });
    });
  });
}

export const describeCheck = (check: Check) => `${check.status} ${check.name}${check.errorMessage ? `: ${check.errorMessage}` : ''}`;

export const failedChecks = (checks: Check[]) => checks.filter((check) => check.status === 'FAILURE' || check.status === 'WARNING');

/** How long a file's `beforeAll` may take to install the suites and run one. */
export const suiteRunTimeoutMs = installTimeoutMs + suiteTimeoutMs + 60_000;

/**
 * Installs the suites, starts the built server with the fixture tools, and runs one suite's server
 * scenarios against it through a loopback proxy that adds a personal access token (the suite sends
 * none); resolves with the run and the clean-up.
 */
export async function runSuiteAgainstServer(which: keyof typeof suitePackages, args: string[]): Promise<{ run: SuiteRun; stop(): Promise<void> }> {
  installSuite();
  const server = await startServer({ MCP_FIXTURE_TOOLS: '1' });
  const proxy = await startBearerProxy(server.url, createToken(server, `conformance-${which}@example.com`));
  const outputDir = fs.mkdtempSync(path.join(os.tmpdir(), `mcp-conformance-${which}-`));
  const stop = async () => {
    await proxy.close();
    await server.stop();
    fs.rmSync(outputDir, { recursive: true, force: true });
  };
  try {
    return { run: await runSuite(which, `${proxy.url}/mcp`, args, outputDir), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
