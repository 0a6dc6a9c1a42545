import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The runner's judgement of real vitest reports: a suite that a condition leaves out, a file the
 * counts list does not know and an expected failure must each fail the run, with a line naming them.
 */
const root = path.resolve(__dirname, '..', '..');
// Inside the project so that the fixture files resolve vitest; test-results/ is not in git, nor in any suite's include.
const fixture = path.join(root, 'test-results', `runner-fixture-${process.pid}`);
const results = path.join(fixture, 'results');
const sources = path.join(fixture, 'sources');
const counts = path.join(fixture, 'counts.json');

const conditionalSuite = `import { describe, expect, it } from 'vitest';
describe('always', () => {
  it('one', () => expect(1).toBe(1));
  it('two', () => expect(2).toBe(2));
});
(process.env.LEAVE_OUT ? () => {} : describe)('sometimes', () => {
  it('three', () => expect(3).toBe(3));
});
`;

function runFixtureSuite(extraEnv: Record<string, string> = {}, expectedStatus = 0) {
  const result = spawnSync(
    path.join(root, 'node_modules', '.bin', 'vitest'),
    ['run', '--root', sources, '--config', path.join(fixture, 'vitest.config.mjs'), '--reporter=json', `--outputFile.json=${path.join(results, 'vitest-all.json')}`],
    { cwd: root, env: { ...process.env, ...extraEnv }, encoding: 'utf8' },
  );
  expect(result.status, result.stderr).toBe(expectedStatus);
}

function runner(...args: string[]) {
  const result = spawnSync(process.execPath, [path.join(root, 'scripts', 'test.mjs'), ...args, '--results', results, '--counts', counts, '--tests', sources], {
    cwd: root,
    encoding: 'utf8',
  });
  return { status: result.status, output: result.stderr + result.stdout, summary: result.stdout.trim().split('\n').at(-1) };
}

const fileKey = (name: string) => path.relative(root, path.join(sources, name));

beforeAll(() => {
  fs.mkdirSync(results, { recursive: true });
  fs.mkdirSync(sources, { recursive: true });
  fs.writeFileSync(path.join(sources, 'conditional.test.ts'), conditionalSuite);
  fs.writeFileSync(path.join(fixture, 'vitest.config.mjs'), "export default { test: { include: ['*.test.ts'] } };\n");
  // The other passes' reports: empty, so that only the fixture suite is judged.
  fs.writeFileSync(path.join(results, 'vitest-route-handler.json'), JSON.stringify({ testResults: [] }));
  fs.writeFileSync(path.join(results, 'vitest-postgres.json'), JSON.stringify({ testResults: [] }));
  fs.writeFileSync(path.join(results, 'vitest-node24.json'), JSON.stringify({ testResults: [] }));
  fs.writeFileSync(path.join(results, 'playwright.json'), JSON.stringify({ config: { rootDir: sources }, suites: [], stats: { expected: 0, unexpected: 0, flaky: 0, skipped: 0 } }));
});

afterAll(() => {
  fs.rmSync(fixture, { recursive: true, force: true });
});

describe('scripts/test.mjs and tests/counts.json', () => {
  it('writes the counts from the last reports, then passes the same run', () => {
    runFixtureSuite();
    const written = runner('--write-counts');
    expect(written.status).toBe(0);
    expect(JSON.parse(fs.readFileSync(counts, 'utf8'))).toEqual({ all: { [fileKey('conditional.test.ts')]: 3 }, 'route-handler': {}, postgres: {}, node24: {}, playwright: {} });
    const checked = runner('--check-reports');
    expect(checked.summary).toBe('3 passed, 0 failed');
    expect(checked.status).toBe(0);
  });

  it('fails a file whose suite a condition left out, naming it', () => {
    runFixtureSuite({ LEAVE_OUT: '1' });
    const checked = runner('--check-reports');
    expect(checked.output).toContain(`${fileKey('conditional.test.ts')} (all): 2 tests ran, tests/counts.json lists 3.`);
    expect(checked.summary).toBe('2 passed, 1 failed');
    expect(checked.status).toBe(1);
  });

  it('fails a file the list does not know, and a listed file that did not run', () => {
    fs.renameSync(path.join(sources, 'conditional.test.ts'), path.join(sources, 'renamed.test.ts'));
    runFixtureSuite();
    const checked = runner('--check-reports');
    expect(checked.output).toContain(`${fileKey('renamed.test.ts')} (all): 3 tests ran but the file is not in tests/counts.json: add it to tests/counts.json`);
    expect(checked.output).toContain(`${fileKey('conditional.test.ts')} (all): did not run; tests/counts.json lists 3 tests for it.`);
    expect(checked.status).toBe(1);
    fs.renameSync(path.join(sources, 'renamed.test.ts'), path.join(sources, 'conditional.test.ts'));
  });

  it('names each failed test, with its pass and the first line of its error, just above the summary', () => {
    fs.writeFileSync(path.join(sources, 'conditional.test.ts'), conditionalSuite.replace('expect(2).toBe(2)', 'expect(2, "two is two").toBe(22)'));
    runFixtureSuite({}, 1);
    const checked = runner('--check-reports');
    const lines = checked.output.trim().split('\n');
    const named = lines.findIndex((line) => line.includes(`${fileKey('conditional.test.ts')} (all) › always two: AssertionError: two is two: expected 2 to be 22`));
    expect(named, checked.output).toBeGreaterThan(lines.indexOf('Failed:'));
    expect(lines.indexOf('Failed:')).toBeGreaterThan(-1);
    expect(checked.summary).toBe('2 passed, 1 failed');
    expect(checked.status).toBe(1);
    fs.writeFileSync(path.join(sources, 'conditional.test.ts'), conditionalSuite);
  });

  it('fails an expected failure, which would pass when its test fails', () => {
    // Spelled in pieces, or the runner would find this very line when it reads the project's tests.
    const expectedToFail = `it.${'fails'}('two', () => expect(2).toBe(3))`;
    fs.writeFileSync(path.join(sources, 'conditional.test.ts'), conditionalSuite.replace("it('two', () => expect(2).toBe(2))", expectedToFail));
    runFixtureSuite();
    const checked = runner('--check-reports');
    expect(checked.output).toContain(`${fileKey('conditional.test.ts')}:4: an expected failure (it.fails, test.fail)`);
    expect(checked.status).toBe(1);
  });
});
