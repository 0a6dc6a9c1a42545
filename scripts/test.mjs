#!/usr/bin/env node
/**
 * `npm test`: builds the app, runs every suite (unit, integration against the built server, and the
 * browser suite in Chromium), then prints one summary line: `N passed, N failed`.
 *
 * A green summary means every test ran and passed: a test that did not run (skipped, or left out by a
 * crash in its suite's beforeAll) counts as failed, `.only` fails the run, a suite with fewer tests
 * than its floor fails, and a suite that runs past its time limit is stopped and fails.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const resultsDir = path.join(root, 'test-results');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };
const totals = { passed: 0, failed: 0 };

/**
 * The fewest tests each suite may report: a suite that silently loses files or tests fails. Raise a
 * floor when adding tests.
 */
const floors = { all: 274, 'route-handler': 186, playwright: 30 };
/** The longest each suite may run before it is stopped (a hang fails instead of stalling CI). */
const timeLimitsMs = { build: 10 * 60_000, vitest: 25 * 60_000, playwright: 20 * 60_000 };

function fail(count, reason) {
  console.error(`\n${reason}`);
  totals.failed += count;
}

function run(command, args, { extraEnv = {}, timeoutMs } = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env: { ...env, ...extraEnv }, timeout: timeoutMs, killSignal: 'SIGKILL' });
  if (result.error?.code === 'ETIMEDOUT') return { status: 1, timedOut: true };
  return { status: result.status ?? 1, timedOut: false };
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** Runs vitest; `pass` names its report, `args` narrows the files, `extraEnv` sets up the pass. */
function runVitest(pass, args = [], extraEnv = {}) {
  const output = path.join(resultsDir, `vitest-${pass}.json`);
  fs.rmSync(output, { force: true });
  const { status, timedOut } = run(bin('vitest'), ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${output}`, ...args], {
    extraEnv,
    timeoutMs: timeLimitsMs.vitest,
  });
  if (timedOut) return fail(1, `vitest (${pass}) ran longer than ${timeLimitsMs.vitest / 60_000} minutes and was stopped.`);
  const report = readJson(output);
  if (!report) return fail(1, 'vitest wrote no report.');
  let passed = 0;
  let failed = 0;
  for (const file of report.testResults) {
    const tests = file.assertionResults;
    const filePassed = tests.filter((test) => test.status === 'passed').length;
    // Tests that did not run count as failed: skipped ones, and those a crash in beforeAll left out.
    const notPassed = tests.length - filePassed;
    passed += filePassed;
    failed += file.status === 'failed' ? Math.max(1, notPassed) : notPassed;
    if (notPassed > 0 && tests.every((test) => test.status !== 'failed')) {
      console.error(`${path.relative(root, file.name)}: ${notPassed} test(s) did not run${file.message ? ` (${file.message.split('\n')[0]})` : ''}`);
    }
  }
  if (status !== 0 && failed === 0) failed = 1;
  totals.passed += passed;
  totals.failed += failed;
  if (report.numTotalTests < floors[pass]) fail(1, `vitest (${pass}) found ${report.numTotalTests} tests, fewer than the floor of ${floors[pass]}.`);
}

function ensureChromium() {
  if (fs.existsSync('/usr/bin/chromium')) return true;
  if (process.getuid?.() === 0) {
    console.log('Installing Chromium for the browser tests (apt-get install chromium)...');
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', 'chromium'], { extraEnv: { DEBIAN_FRONTEND: 'noninteractive' } });
  }
  if (fs.existsSync('/usr/bin/chromium')) return true;
  console.error('The browser tests need Chromium at /usr/bin/chromium. Install it as root: apt-get install -y chromium');
  return false;
}

function hasSpecs(dir) {
  if (!fs.existsSync(dir)) return false;
  return fs.readdirSync(dir, { recursive: true }).some((file) => String(file).endsWith('.spec.ts'));
}

function runPlaywright() {
  if (!hasSpecs(path.join(root, 'tests', 'e2e'))) return fail(1, 'No browser tests found in tests/e2e.');
  if (!ensureChromium()) return fail(1, 'The browser tests could not run.');
  const output = path.join(resultsDir, 'playwright.json');
  fs.rmSync(output, { force: true });
  const { status, timedOut } = run(bin('playwright'), ['test', '--reporter=list,json'], {
    extraEnv: { PLAYWRIGHT_JSON_OUTPUT_NAME: output },
    timeoutMs: timeLimitsMs.playwright,
  });
  if (timedOut) return fail(1, `playwright ran longer than ${timeLimitsMs.playwright / 60_000} minutes and was stopped.`);
  const stats = readJson(output)?.stats;
  if (!stats) return fail(1, 'playwright wrote no report.');
  const passed = stats.expected + stats.flaky;
  // A skipped test did not run: a crash in a beforeAll skips the rest of its file.
  let failed = stats.unexpected + stats.skipped;
  if (stats.skipped > 0) console.error(`playwright: ${stats.skipped} test(s) did not run`);
  if (status !== 0 && failed === 0) failed = 1;
  totals.passed += passed;
  totals.failed += failed;
  const total = passed + stats.unexpected + stats.skipped;
  if (total < floors.playwright) fail(1, `playwright found ${total} tests, fewer than the floor of ${floors.playwright}.`);
}

fs.mkdirSync(resultsDir, { recursive: true });
console.log('Building the application...');
if (run(process.execPath, [path.join(root, 'node_modules', 'next', 'dist', 'bin', 'next'), 'build'], { timeoutMs: timeLimitsMs.build }).status !== 0) {
  fail(1, 'build failed');
} else {
  runVitest('all');
  // The integration suites again with /mcp served by Next's route handler (next start), the mount for
  // hosts that run only route handlers. The authorization server needs npm start's server, so its
  // suite runs once.
  console.log('\nIntegration suites through the route handler (next start)...');
  runVitest('route-handler', ['tests/integration', '--exclude', 'tests/integration/oauth.test.ts'], { MCP_TEST_MOUNT: 'route-handler' });
  runPlaywright();
}
console.log(`\n${totals.passed} passed, ${totals.failed} failed`);
process.exit(totals.failed > 0 ? 1 : 0);
