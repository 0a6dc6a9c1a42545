import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineTool, textResult, ToolProtocolError, type ElicitAnswer, type ElicitRequest, type ToolDefinition } from './define';
import { addToolSource, toolsChanged } from './sources';

/*
 * The tools the 2026-07-28 scenarios of the official MCP conformance suite call (tests only,
 * MCP_FIXTURE_TOOLS=1): the stateless multi round-trip ones (test_input_required_result_*), the tasks
 * extension's (greet, slow_compute, failing_job…) and the diagnostic ones. Their names, arguments and
 * results are the ones the scenarios ask for. Each asks its questions through the task, like any tool:
 * the suite's client answers them by retrying (or with tasks/update), and a person could answer them in
 * the dashboard instead.
 */

const noArguments = z.object({});

const form = (message: string, properties: Record<string, unknown>): ElicitRequest => ({
  message,
  requestedSchema: { type: 'object', properties, required: Object.keys(properties) },
});

const textOf = (answer: ElicitAnswer, field: string) => String(answer.content?.[field] ?? '');

export const greetTool = defineTool({
  name: 'greet',
  description: 'Says hello at once (never a task).',
  inputSchema: z.object({ name: z.string().max(200) }),
  taskSupport: 'forbidden',
  async run({ name }) {
    return textResult(`Hello, ${name}!`);
  },
});

export const slowComputeTool = defineTool({
  name: 'slow_compute',
  description: 'Sleeps the given number of seconds, then returns; a cancellation stops it.',
  inputSchema: z.object({ seconds: z.number().min(0).max(600), label: z.string().max(200).optional() }),
  taskSupport: 'optional',
  maxRunMs: 600_000,
  async run({ seconds, label }, ctx) {
    await sleep(seconds * 1000, undefined, { signal: ctx.signal });
    return textResult(`Computed ${label ?? 'result'} after ${seconds} s`);
  },
});

export const failingJobTool = defineTool({
  name: 'failing_job',
  description: 'Runs about a second as a task, then ends with a tool error (isError).',
  inputSchema: noArguments,
  taskSupport: 'required',
  async run(_args, ctx) {
    await sleep(1000, undefined, { signal: ctx.signal });
    return textResult('The job failed: the input could not be processed', true);
  },
});

export const protocolErrorJobTool = defineTool({
  name: 'protocol_error_job',
  description: 'Runs as a task and ends with a JSON-RPC error.',
  inputSchema: noArguments,
  taskSupport: 'required',
  async run() {
    throw new ToolProtocolError(-32603, 'The job hit an internal error');
  },
});

export const confirmDeleteTool = defineTool({
  name: 'confirm_delete',
  description: 'Asks to confirm deleting a file, then says what it did.',
  inputSchema: z.object({ filename: z.string().max(500) }),
  taskSupport: 'optional',
  async run({ filename }, ctx) {
    const answer = await ctx.elicit(form(`Delete ${filename}?`, { confirm: { type: 'boolean', title: 'Delete it' } }), { key: 'confirm' });
    const confirmed = answer.action === 'accept' && answer.content?.confirm === true;
    return textResult(confirmed ? `Deleted ${filename}` : `Kept ${filename}`);
  },
});

export const multiInputTool = defineTool({
  name: 'multi_input',
  description: 'Asks two questions at once, then reports both answers.',
  inputSchema: noArguments,
  taskSupport: 'optional',
  async run(_args, ctx) {
    const question = (which: string) => form(`The ${which} question`, { name: { type: 'string' }, confirm: { type: 'boolean' } });
    const [first, second] = await Promise.all([ctx.elicit(question('first'), { key: 'first' }), ctx.elicit(question('second'), { key: 'second' })]);
    return textResult(`First: ${textOf(first, 'name')}; second: ${textOf(second, 'name')}`);
  },
});

export const toolWithTaskTool = defineTool({
  name: 'test_tool_with_task',
  description: 'Asks for a name before its task is handed out, then greets as a task.',
  inputSchema: noArguments,
  taskSupport: 'required',
  asksBeforeTask: true,
  async run(_args, ctx) {
    const answer = await ctx.elicit(form('What is your name?', { name: { type: 'string' } }), { key: 'user_name' });
    await sleep(200, undefined, { signal: ctx.signal });
    return textResult(`Hello, ${textOf(answer, 'name')}!`);
  },
});

export const inputRequiredElicitationTool = defineTool({
  name: 'test_input_required_result_elicitation',
  description: 'Asks for a name (elicitation), then greets.',
  inputSchema: noArguments,
  taskSupport: 'optional',
  async run(_args, ctx) {
    const answer = await ctx.elicit(form('What is your name?', { name: { type: 'string' } }), { key: 'user_name' });
    return textResult(`Hello, ${textOf(answer, 'name')}!`);
  },
});

const capitalQuestion = {
  messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
  maxTokens: 100,
};

const sampledText = (result: Record<string, unknown>) => {
  const content = result.content as { text?: unknown } | undefined;
  return typeof content?.text === 'string' ? content.text : 'no response';
};

export const inputRequiredSamplingTool = defineTool({
  name: 'test_input_required_result_sampling',
  description: "Asks the client's model a question (sampling), then reports the answer.",
  inputSchema: noArguments,
  taskSupport: 'optional',
  async run(_args, ctx) {
    const result = await ctx.createMessage(capitalQuestion, { key: 'sample_request' });
    return textResult(`Sampling result: ${sampledText(result)}`);
  },
});

const confirmation = form('Please confirm', { ok: { type: 'boolean' } });

export const inputRequiredRequestStateTool = defineTool({
  name: 'test_input_required_result_request_state',
  description: 'Asks for a confirmation; the retry must bring back the requestState.',
  inputSchema: noArguments,
  taskSupport: 'optional',
  async run(_args, ctx) {
    const answer = await ctx.elicit(confirmation, { key: 'confirm' });
    return textResult(answer.content?.ok === true ? 'state-ok: requestState validated' : 'state-declined');
  },
});

export const inputRequiredTamperedStateTool = defineTool({
  name: 'test_input_required_result_tampered_state',
  description: 'Asks for a confirmation under a signed requestState.',
  inputSchema: noArguments,
  taskSupport: 'optional',
  async run(_args, ctx) {
    await ctx.elicit(confirmation, { key: 'confirm' });
    return textResult('integrity-ok: state verified');
  },
});

export const inputRequiredMultiRoundTool = defineTool({
  name: 'test_input_required_result_multi_round',
  description: 'Asks two questions one after the other.',
  inputSchema: noArguments,
  taskSupport: 'optional',
  async run(_args, ctx) {
    const name = textOf(await ctx.elicit(form('Step 1: What is your name?', { name: { type: 'string' } }), { key: 'step1' }), 'name');
    const color = textOf(await ctx.elicit(form('Step 2: What is your favorite color?', { color: { type: 'string' } }), { key: 'step2' }), 'color');
    return textResult(`Multi-round complete for ${name} who likes ${color}`);
  },
});

export const inputRequiredCapabilitiesTool = defineTool({
  name: 'test_input_required_result_capabilities',
  description: "Asks a person and the client's model at once; each client is sent only what it declared it can answer.",
  inputSchema: noArguments,
  taskSupport: 'optional',
  async run(_args, ctx) {
    const [elicited, sampled] = await Promise.all([
      ctx.elicit(form('Elicitation input', { value: { type: 'string' } }), { key: 'elicit_input' }),
      ctx.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Sample request' } }], maxTokens: 50 }, { key: 'sample_input' }),
    ]);
    return textResult(`capabilities-ok: received ${textOf(elicited, 'value')}, ${sampledText(sampled)}`);
  },
});

export const missingCapabilityTool = defineTool({
  name: 'test_missing_capability',
  description: "Needs the client's sampling capability.",
  inputSchema: noArguments,
  taskSupport: 'forbidden',
  requiresClient: 'sampling',
  async run() {
    return textResult('Success');
  },
});

export const streamingTool = defineTool({
  name: 'test_streaming_elicitation',
  description: 'Reports progress on its response stream, then returns.',
  inputSchema: noArguments,
  taskSupport: 'forbidden',
  async run(_args, ctx) {
    ctx.progress(50, 100, 'Half way');
    return textResult('Streaming complete');
  },
});

export const loggingDiagnosticTool = defineTool({
  name: 'test_logging_tool',
  description: 'Logs one message: only a request that set a log level receives it.',
  inputSchema: noArguments,
  taskSupport: 'forbidden',
  async run(_args, ctx) {
    ctx.log('info', 'Diagnostic trace logging activated');
    return textResult('Logging evaluated');
  },
});

const changingTool = defineTool({
  name: 'test_changing_tool',
  description: 'Listed only while test_trigger_tool_change has added it.',
  inputSchema: noArguments,
  taskSupport: 'forbidden',
  async run() {
    return textResult('Still here');
  },
});

/** Whether test_changing_tool is listed; on globalThis, as every bundle's copy of this module must agree. */
const globalForChange = globalThis as unknown as { __mcpTaskServerChangingTool?: { listed: boolean } };

export const triggerToolChangeTool = defineTool({
  name: 'test_trigger_tool_change',
  description: 'Adds test_changing_tool to the list of tools, or takes it away again: the list changes, and whoever listens is told.',
  inputSchema: noArguments,
  taskSupport: 'forbidden',
  async run() {
    let state = globalForChange.__mcpTaskServerChangingTool;
    if (!state) {
      const created = { listed: false };
      state = globalForChange.__mcpTaskServerChangingTool = created;
      addToolSource({ tools: () => (created.listed ? [changingTool as unknown as ToolDefinition] : []) });
    }
    state.listed = !state.listed;
    toolsChanged();
    return textResult(state.listed ? 'test_changing_tool added' : 'test_changing_tool removed');
  },
});

export const modernFixtureTools = [
  greetTool,
  slowComputeTool,
  failingJobTool,
  protocolErrorJobTool,
  confirmDeleteTool,
  multiInputTool,
  toolWithTaskTool,
  inputRequiredElicitationTool,
  inputRequiredSamplingTool,
  inputRequiredRequestStateTool,
  inputRequiredTamperedStateTool,
  inputRequiredMultiRoundTool,
  inputRequiredCapabilitiesTool,
  missingCapabilityTool,
  streamingTool,
  loggingDiagnosticTool,
  triggerToolChangeTool,
];
