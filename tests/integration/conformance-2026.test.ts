import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  describeCheck,
  failedChecks,
  installedSuiteVersion,
  readExpectedFailures,
  runSuiteAgainstServer,
  suiteDir,
  suiteManifest,
  suiteRunTimeoutMs,
  type Check,
  type SuiteRun,
} from '../helpers/conformance';

/**
 * The official MCP conformance suite's scenarios for protocol revision 2026-07-28 (0.2.0-alpha.12, pinned
 * in tests/conformance under the alias conformance-2026), run against the built server through the same
 * token-adding proxy as the 2025-11-25 run: `server --requirements 2026-07-28`, which runs every scored
 * scenario of the revision and, unscored, every scenario of the tasks extension (tasks-*) and the pending ones.
 */
const expectedFailuresFile = path.resolve(suiteDir, 'expected-failures-2026.yaml');
const expectedFailures = readExpectedFailures(expectedFailuresFile);

/** What `conformance list` shows for `--requirements 2026-07-28`: scored, then unscored. */
const scored = [
  'server-stateless',
  'completion-complete',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-error',
  'tools-call-with-progress',
  'server-sse-multiple-streams',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'sep-2164-resource-not-found',
  'prompts-list',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
  'dns-rebinding-protection',
  'caching',
  'input-required-result-basic-elicitation',
  'input-required-result-basic-sampling',
  'input-required-result-basic-list-roots',
  'input-required-result-request-state',
  'input-required-result-multiple-input-requests',
  'input-required-result-multi-round',
  'input-required-result-missing-input-response',
  'input-required-result-non-tool-request',
  'input-required-result-result-type',
  'input-required-result-unsupported-methods',
  'input-required-result-tampered-state',
  'input-required-result-capability-check',
  'input-required-result-ignore-extra-params',
  'input-required-result-validate-input',
];
const tasksExtension = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-dispatch-and-envelope',
  'tasks-status-notifications',
  'tasks-required-task-error',
  'tasks-mrtr-composition',
];
const pending = ['json-schema-2020-12', 'http-header-validation', 'http-custom-header-server-validation'];

/**
 * Unscored scenarios that cannot pass here, with the reason; the suite does not hold them against the
 * server, and neither does this file, but each must fail for exactly that reason.
 */
const unscoredFailures: Record<string, { reason: string; cause: RegExp }> = {
  'http-custom-header-server-validation': {
    reason: 'no tool of this server mirrors an argument into a header (x-mcp-header), so nothing can be exercised',
    cause: /^Not testable: server exposes no tool with x-mcp-header/,
  },
};
/** Scenarios the suite skips as a whole, with the reason it gives. */
const skippedBySuite: Record<string, RegExp> = {
  'tasks-status-notifications': /harness needs a rewrite against the new channel/,
};

/** Why each expected failure fails: the method is not offered, or the fixture tool does not exist. */
const expectedCause: Record<string, RegExp> = {
  'sep-2164-resource-not-found': /-32601|data.uri is undefined/,
  'input-required-result-basic-list-roots': /Unknown tool: test_input_required_result_list_roots/,
  'input-required-result-multiple-input-requests': /Unknown tool: test_input_required_result_multiple_inputs/,
};
const notOffered = /-32601|Method not found/;

let run: SuiteRun;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ run, stop } = await runSuiteAgainstServer('modern', ['--requirements', '2026-07-28', '--expected-failures', expectedFailuresFile]));
}, suiteRunTimeoutMs);

afterAll(async () => {
  await stop?.();
});

const checksOf = (scenario: string): Check[] => run.checksByScenario.get(scenario)!;

describe('the official MCP conformance suite for 2026-07-28 (server scenarios, tasks extension)', () => {
  it('runs the 2026-07-28 suite version tests/conformance pins', () => {
    expect(installedSuiteVersion('modern')).toBe(suiteManifest.dependencies['conformance-2026'].replace(/^npm:@modelcontextprotocol\/conformance@/, ''));
  });

  it('ran every scenario the revision requires, every tasks extension scenario and the pending ones, each once', () => {
    expect([...run.checksByScenario.keys()].sort()).toEqual([...scored, ...tasksExtension, ...pending].sort());
  });

  it('exits 0: no unexpected failure, and no expected failure that now passes', () => {
    expect(run.exitCode, run.output.slice(-4000)).toBe(0);
  });

  it('lists as expected failures only scored scenarios, each with a reason', () => {
    for (const [scenario, reason] of expectedFailures) {
      expect(scored).toContain(scenario);
      expect(reason, scenario).not.toBe('');
    }
  });

  for (const scenario of [...scored, ...tasksExtension, ...pending]) {
    if (expectedFailures.has(scenario)) {
      it(`${scenario}: fails only because ${expectedFailures.get(scenario)}`, () => {
        const failed = failedChecks(checksOf(scenario));
        expect(failed.length).toBeGreaterThan(0);
        for (const check of failed) expect(check.errorMessage, describeCheck(check)).toMatch(expectedCause[scenario] ?? notOffered);
      });
    } else if (unscoredFailures[scenario]) {
      it(`${scenario} (unscored): fails only because ${unscoredFailures[scenario].reason}`, () => {
        const failed = failedChecks(checksOf(scenario));
        expect(failed.length).toBeGreaterThan(0);
        for (const check of failed) expect(check.errorMessage, describeCheck(check)).toMatch(unscoredFailures[scenario].cause);
      });
    } else if (skippedBySuite[scenario]) {
      it(`${scenario}: skipped by the suite itself, for its own reason`, () => {
        const checks = checksOf(scenario);
        expect(checks.length).toBeGreaterThan(0);
        for (const check of checks) {
          expect(check.status, describeCheck(check)).toBe('SKIPPED');
          expect(check.errorMessage).toMatch(skippedBySuite[scenario]);
        }
      });
    } else {
      it(`${scenario}: passes every check, without warnings`, () => {
        const checks = checksOf(scenario);
        expect(checks.some((check) => check.status === 'SUCCESS')).toBe(true);
        expect(failedChecks(checks).map(describeCheck)).toEqual([]);
      });
    }
  }
});
