import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBearerProxy, type BearerProxy } from '../helpers/bearer-proxy';
import { createToken, startServer, type TestServer } from '../helpers/server';

/**
 * The official MCP conformance suite's server scenarios, run against the built server. The suite and
 * the Node 22 it needs are pinned in tests/conformance (its own package.json and lock file), installed
 * there with `npm ci` when missing or older than the lock file, and run on that Node: a run resolves
 * nothing anew. The suite sends no token, so a loopback proxy adds a personal access token to every request.
 */
const suiteDir = path.resolve(__dirname, '..', 'conformance');
const suiteBin = path.join(suiteDir, 'node_modules', '.bin');
const suiteManifest = JSON.parse(fs.readFileSync(path.join(suiteDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
/** Long enough for a first install to download Node 22 (about 30 MB) on a slow link. */
const installTimeoutMs = 5 * 60_000;
const suiteTimeoutMs = 5 * 60_000;

/** Installs tests/conformance from its lock file, unless the install is already that of the current lock file. */
function installSuite(): void {
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

/** Every server scenario of the pinned suite (`conformance list`), pending ones included (`--suite all`). */
const scenarios = [
  'server-initialize',
  'logging-set-level',
  'ping',
  'completion-complete',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-with-logging',
  'tools-call-error',
  'tools-call-with-progress',
  'tools-call-sampling',
  'tools-call-elicitation',
  'json-schema-2020-12',
  'elicitation-sep1034-defaults',
  'server-sse-polling',
  'server-sse-multiple-streams',
  'elicitation-sep1330-enums',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'resources-subscribe',
  'resources-unsubscribe',
  'prompts-list',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
  'dns-rebinding-protection',
];

const expectedFailuresFile = path.resolve(__dirname, '..', 'conformance', 'expected-failures.yaml');

/** The scenarios the YAML file lists under `server:`, each with the reason its comment gives. */
function readExpectedFailures(): Map<string, string> {
  const listed = new Map<string, string>();
  for (const line of fs.readFileSync(expectedFailuresFile, 'utf8').split('\n')) {
    const entry = /^\s+-\s+([a-z0-9-]+)\s*(?:#\s*(.*))?$/.exec(line);
    if (entry) listed.set(entry[1], entry[2]?.trim() ?? '');
  }
  return listed;
}

interface Check {
  id: string;
  name: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

interface SuiteRun {
  exitCode: number | null;
  output: string;
  checksByScenario: Map<string, Check[]>;
}

/** Runs the whole suite once; resolves when it exits (or is stopped at the time limit). */
function runSuite(url: string, outputDir: string): Promise<SuiteRun> {
  const args = [fs.realpathSync(path.join(suiteBin, 'conformance')), 'server', '--url', url, '--suite', 'all'];
  args.push('--expected-failures', expectedFailuresFile, '--output-dir', outputDir);
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(suiteBin, 'node'), args, {
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
        const scenario = scenarios.find((name) => dir.startsWith(`server-${name}-`) && /^\d{4}-/.test(dir.slice(`server-${name}-`.length)));
        const file = path.join(outputDir, dir, 'checks.json');
        if (scenario && fs.existsSync(file)) checksByScenario.set(scenario, JSON.parse(fs.readFileSync(file, 'utf8')));
      }
      if (checksByScenario.size === 0) {
        reject(new Error(`The conformance suite did not run (exit code ${exitCode}). Its output:\n${output.slice(-4000)}`));
        return;
      }
      resolve({ exitCode, output, checksByScenario });
    });
  });
}

const describeCheck = (check: Check) => `${check.status} ${check.name}${check.errorMessage ? `: ${check.errorMessage}` : ''}`;

let server: TestServer;
let proxy: BearerProxy;
let outputDir: string;
let run: SuiteRun;
const expectedFailures = readExpectedFailures();

beforeAll(async () => {
  installSuite();
  server = await startServer({ MCP_FIXTURE_TOOLS: '1' });
  proxy = await startBearerProxy(server.url, createToken(server, 'conformance@example.com'));
  outputDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-conformance-'));
  run = await runSuite(`${proxy.url}/mcp`, outputDir);
}, installTimeoutMs + suiteTimeoutMs + 60_000);

afterAll(async () => {
  await proxy?.close();
  await server?.stop();
  if (outputDir) fs.rmSync(outputDir, { recursive: true, force: true });
});

describe('the official MCP conformance suite (server scenarios)', () => {
  it('runs the suite version tests/conformance pins, on its Node 22, leaving the project on its own Node', () => {
    const installed = JSON.parse(fs.readFileSync(path.join(suiteDir, 'node_modules', '@modelcontextprotocol', 'conformance', 'package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe(suiteManifest.dependencies['@modelcontextprotocol/conformance']);
    expect(spawnSync(path.join(suiteBin, 'node'), ['--version'], { encoding: 'utf8' }).stdout.trim()).toBe(`v${suiteManifest.dependencies.node}`);
    expect(suiteManifest.dependencies.node).toMatch(/^22\.\d+\.\d+$/);
    // npm scripts put the project's node_modules/.bin first on PATH: a node there would run them all on Node 22.
    expect(fs.existsSync(path.resolve(__dirname, '..', '..', 'node_modules', '.bin', 'node'))).toBe(false);
  });

  it('ran every scenario of the pinned suite, each once', () => {
    expect([...run.checksByScenario.keys()].sort()).toEqual([...scenarios].sort());
    expect(run.output).toContain(`Running all suite (${scenarios.length} scenarios)`);
  });

  it('exits 0: no unexpected failure, and no expected failure that now passes', () => {
    expect(run.exitCode, run.output.slice(-4000)).toBe(0);
  });

  it('lists as expected failures only scenarios it runs, each with a reason', () => {
    for (const [scenario, reason] of expectedFailures) {
      expect(scenarios).toContain(scenario);
      expect(reason, scenario).not.toBe('');
    }
  });

  for (const scenario of scenarios) {
    if (expectedFailures.has(scenario)) {
      it(`${scenario}: fails only because the server does not offer the method (-32601)`, () => {
        const failed = run.checksByScenario.get(scenario)!.filter((check) => check.status === 'FAILURE' || check.status === 'WARNING');
        expect(failed.length).toBeGreaterThan(0);
        for (const check of failed) expect(check.errorMessage, describeCheck(check)).toMatch(/-32601|Method not found/);
      });
    } else {
      it(`${scenario}: passes every check, without warnings`, () => {
        const checks = run.checksByScenario.get(scenario)!;
        expect(checks.some((check) => check.status === 'SUCCESS')).toBe(true);
        expect(checks.filter((check) => check.status === 'FAILURE' || check.status === 'WARNING').map(describeCheck)).toEqual([]);
      });
    }
  }
});
