#!/usr/bin/env node
/**
 * `npm test`: builds the app, runs every suite (unit, integration against the built server, and the
 * browser suite in Chromium when it has specs), then prints one summary line: `N passed, N failed`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const resultsDir = path.join(root, 'test-results');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };
const totals = { passed: 0, failed: 0, skipped: 0 };

function run(command, args, extraEnv = {}) {
  return spawnSync(command, args, { cwd: root, stdio: 'inherit', env: { ...env, ...extraEnv } }).status ?? 1;
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
  const status = run(bin('vitest'), ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${output}`, ...args], extraEnv);
  const report = readJson(output);
  const passed = report?.numPassedTests ?? 0;
  let failed = report?.numFailedTests ?? 0;
  // A suite that fails before its tests run (a crash in beforeAll) counts as a failure too.
  if (status !== 0 && failed === 0) failed = Math.max(1, report?.numFailedTestSuites ?? 0);
  totals.passed += passed;
  totals.failed += failed;
  totals.skipped += (report?.numPendingTests ?? 0) + (report?.numTodoTests ?? 0);
}

function ensureChromium() {
  if (fs.existsSync('/usr/bin/chromium')) return true;
  if (process.getuid?.() === 0) {
    console.log('Installing Chromium for the browser tests (apt-get install chromium)...');
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', 'chromium'], { DEBIAN_FRONTEND: 'noninteractive' });
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
  if (!hasSpecs(path.join(root, 'tests', 'e2e'))) return;
  if (!ensureChromium()) {
    totals.failed += 1;
    return;
  }
  const output = path.join(resultsDir, 'playwright.json');
  fs.rmSync(output, { force: true });
  const status = run(bin('playwright'), ['test', '--reporter=list,json'], { PLAYWRIGHT_JSON_OUTPUT_NAME: output });
  const stats = readJson(output)?.stats;
  const passed = (stats?.expected ?? 0) + (stats?.flaky ?? 0);
  let failed = stats?.unexpected ?? 0;
  if (status !== 0 && failed === 0) failed = 1;
  totals.passed += passed;
  totals.failed += failed;
  totals.skipped += stats?.skipped ?? 0;
}

fs.mkdirSync(resultsDir, { recursive: true });
console.log('Building the application...');
if (run(process.execPath, [path.join(root, 'node_modules', 'next', 'dist', 'bin', 'next'), 'build']) !== 0) {
  console.log('build failed');
  totals.failed += 1;
} else {
  runVitest('all');
  // The integration suites again with /mcp served by Next's route handler (next start), the mount for
  // hosts that run only route handlers. The authorization server needs npm start's server, so its
  // suite runs once.
  console.log('\nIntegration suites through the route handler (next start)...');
  runVitest('route-handler', ['tests/integration', '--exclude', 'tests/integration/oauth.test.ts'], { MCP_TEST_MOUNT: 'route-handler' });
  runPlaywright();
}
const summary = `${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`;
console.log(`\n${summary}`);
process.exit(totals.failed > 0 ? 1 : 0);
