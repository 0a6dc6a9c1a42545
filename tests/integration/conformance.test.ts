import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  describeCheck,
  failedChecks,
  installedSuiteVersion,
  readExpectedFailures,
  runSuiteAgainstServer,
  suiteBin,
  suiteDir,
  suiteManifest,
  suiteRunTimeoutMs,
  type SuiteRun,
} from '../helpers/conformance';

/**
 * The official MCP conformance suite's server scenarios for the 2025-11-25 era (0.1.16, pinned in
 * tests/conformance), run against the built server. The suite sends no token, so a loopback proxy adds
 * a personal access token to every request.
 */
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

const expectedFailuresFile = path.resolve(suiteDir, 'expected-failures.yaml');

let run: SuiteRun;
let stop: (() => Promise<void>) | undefined;
const expectedFailures = readExpectedFailures(expectedFailuresFile);

beforeAll(async () => {
  ({ run, stop } = await runSuiteAgainstServer('legacy', ['--suite', 'all', '--expected-failures', expectedFailuresFile]));
}, suiteRunTimeoutMs);

afterAll(async () => {
  await stop?.();
});

describe('the official MCP conformance suite (server scenarios)', () => {
  it('runs the suite version tests/conformance pins, on its Node 22, leaving the project on its own Node', () => {
    expect(installedSuiteVersion('legacy')).toBe(suiteManifest.dependencies['@modelcontextprotocol/conformance']);
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
        const failed = failedChecks(run.checksByScenario.get(scenario)!);
        expect(failed.length).toBeGreaterThan(0);
        for (const check of failed) expect(check.errorMessage, describeCheck(check)).toMatch(/-32601|Method not found/);
      });
    } else {
      it(`${scenario}: passes every check, without warnings`, () => {
        const checks = run.checksByScenario.get(scenario)!;
        expect(checks.some((check) => check.status === 'SUCCESS')).toBe(true);
        expect(failedChecks(checks).map(describeCheck)).toEqual([]);
      });
    }
  }
});
