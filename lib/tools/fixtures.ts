import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { delayTool } from './delay';
import { defineTool, logLevels, textResult, type CallToolResult, type ElicitRequest, type ToolContext } from './define';

const noArguments = z.object({});

/**
 * Tools that only the tests load (MCP_FIXTURE_TOOLS=1): they let a test see what a real tool does
 * not show, such as the moment its run() ends after a cancellation.
 */
export const observedDelayTool = defineTool({
  name: 'fixture_observed_delay',
  description: 'Runs delay, and writes one line to standard output when that run ends, however it ends.',
  inputSchema: delayTool.inputSchema,
  taskSupport: 'optional',
  async run(args, ctx) {
    let ending = 'returned';
    try {
      return await delayTool.run(args, ctx);
    } catch (error) {
      ending = error instanceof Error ? error.name : 'threw';
      throw error;
    } finally {
      process.stdout.write(`${JSON.stringify({ fixture: 'run-ended', taskId: ctx.taskId, ending, at: Date.now() })}\n`);
    }
  },
});

/** No real tool requires a task; this one does, so that the rule for such tools is tested. */
export const requiresTaskTool = defineTool({
  name: 'fixture_requires_task',
  description: 'Returns at once, and only when called as a task.',
  inputSchema: z.object({}),
  taskSupport: 'required',
  async run() {
    return textResult('Ran as a task.');
  },
});

/** Logs one message at every level, least severe first: a test sees which a level lets through. */
export const logEveryLevelTool = defineTool({
  name: 'fixture_log_every_level',
  description: 'Sends one log message at each level, from debug to emergency, and returns at once.',
  inputSchema: noArguments,
  taskSupport: 'forbidden',
  async run(_args, ctx) {
    for (const level of logLevels) ctx.log(level, { level, note: `a ${level} message` }, 'fixture');
    return textResult(`Logged ${logLevels.length} messages.`);
  },
});

/*
 * The tools the server scenarios of the official MCP conformance suite call
 * (@modelcontextprotocol/conformance; tests/integration/conformance.test.ts): their names, arguments
 * and results are the ones the suite's scenarios ask for.
 */

/** A 1x1 red PNG. */
const redPixelPng = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
/** Eight samples of silence: 16-bit mono PCM WAV at 8 kHz. */
const silentWav = 'UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA';
/** The pause between a tool's reports, so that the client receives them as separate messages. */
const reportPauseMs = 50;

/** A tool without arguments that returns the same result every time. */
function fixedResultTool(name: string, description: string, result: CallToolResult) {
  return defineTool({ name, description, inputSchema: noArguments, taskSupport: 'forbidden', run: async () => result });
}

export const simpleTextTool = fixedResultTool('test_simple_text', 'Returns one text block.', textResult('This is a simple text response for testing.'));

export const imageContentTool = fixedResultTool('test_image_content', 'Returns one image block (a 1x1 PNG).', {
  content: [{ type: 'image', data: redPixelPng, mimeType: 'image/png' }],
});

export const audioContentTool = fixedResultTool('test_audio_content', 'Returns one audio block (a short silent WAV).', {
  content: [{ type: 'audio', data: silentWav, mimeType: 'audio/wav' }],
});

export const embeddedResourceTool = fixedResultTool('test_embedded_resource', 'Returns one embedded text resource.', {
  content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
});

export const multipleContentTypesTool = fixedResultTool('test_multiple_content_types', 'Returns a text, an image and an embedded resource block.', {
  content: [
    { type: 'text', text: 'Multiple content types test:' },
    { type: 'image', data: redPixelPng, mimeType: 'image/png' },
    { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) } },
  ],
});

export const errorHandlingTool = fixedResultTool(
  'test_error_handling',
  'Always fails with an isError result.',
  textResult('This tool intentionally returns an error for testing', true),
);

/** Optional, so that a task-augmented call shows its log messages reaching the session's stream. */
export const loggingTool = defineTool({
  name: 'test_tool_with_logging',
  description: 'Sends three info log messages while it runs.',
  inputSchema: noArguments,
  taskSupport: 'optional',
  async run(_args, ctx) {
    ctx.log('info', 'Tool execution started', 'test_tool_with_logging');
    await sleep(reportPauseMs, undefined, { signal: ctx.signal });
    ctx.log('info', 'Tool processing data', 'test_tool_with_logging');
    await sleep(reportPauseMs, undefined, { signal: ctx.signal });
    ctx.log('info', 'Tool execution completed', 'test_tool_with_logging');
    return textResult('Tool with logging executed successfully.');
  },
});

export const progressTool = defineTool({
  name: 'test_tool_with_progress',
  description: 'Reports progress 0, 50 and 100 of 100 while it runs.',
  inputSchema: noArguments,
  taskSupport: 'forbidden',
  async run(_args, ctx) {
    ctx.progress(0, 100);
    await sleep(reportPauseMs, undefined, { signal: ctx.signal });
    ctx.progress(50, 100);
    await sleep(reportPauseMs, undefined, { signal: ctx.signal });
    ctx.progress(100, 100);
    return textResult('Tool with progress executed successfully.');
  },
});

export const samplingTool = defineTool({
  name: 'test_sampling',
  description: "Asks the client's model to answer a prompt (sampling/createMessage).",
  inputSchema: z.object({ prompt: z.string().describe('The prompt to send to the model.') }),
  taskSupport: 'optional',
  requiresClient: 'sampling',
  async run({ prompt }, ctx) {
    const reply = await ctx.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 }, { key: 'prompt' });
    const content = reply.content as { type?: string; text?: string } | undefined;
    return textResult(`LLM response: ${content?.type === 'text' ? content.text : JSON.stringify(content ?? null)}`);
  },
});

/** Asks one question and returns the answer as the suite's elicitation scenarios expect it. */
async function askAndReport(ctx: ToolContext, request: ElicitRequest, prefix: string) {
  const answer = await ctx.elicit(request, { key: 'question' });
  return textResult(`${prefix}: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
}

export const elicitationTool = defineTool({
  name: 'test_elicitation',
  description: 'Asks the user for a username and an email address (elicitation/create).',
  inputSchema: z.object({ message: z.string().describe('The message to show the user.') }),
  taskSupport: 'optional',
  requiresClient: 'elicitation',
  async run({ message }, ctx) {
    return askAndReport(
      ctx,
      {
        message,
        requestedSchema: {
          type: 'object',
          properties: {
            username: { type: 'string', description: "User's response" },
            email: { type: 'string', description: "User's email address" },
          },
          required: ['username', 'email'],
        },
      },
      'User response',
    );
  },
});

/** A tool without arguments that asks the same question every time. */
function fixedQuestionTool(name: string, description: string, question: ElicitRequest) {
  return defineTool({
    name,
    description,
    inputSchema: noArguments,
    taskSupport: 'optional',
    requiresClient: 'elicitation',
    run: (_args, ctx) => askAndReport(ctx, question, 'Elicitation completed'),
  });
}

export const elicitationDefaultsTool = fixedQuestionTool('test_elicitation_sep1034_defaults', 'Asks a question whose every field has a default (SEP-1034).', {
  message: 'Please review and update the form fields with defaults',
  requestedSchema: {
    type: 'object',
    properties: {
      name: { type: 'string', description: 'User name', default: 'John Doe' },
      age: { type: 'integer', description: 'User age', default: 30 },
      score: { type: 'number', description: 'User score', default: 95.5 },
      status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
      verified: { type: 'boolean', description: 'Verification status', default: true },
    },
  },
});

export const elicitationEnumsTool = fixedQuestionTool('test_elicitation_sep1330_enums', 'Asks a question with each of the five kinds of choice (SEP-1330).', {
  message: 'Please select options from the enum fields',
  requestedSchema: {
    type: 'object',
    properties: {
      untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
      titledSingle: {
        type: 'string',
        description: 'Select one option with titles',
        oneOf: [
          { const: 'value1', title: 'First Option' },
          { const: 'value2', title: 'Second Option' },
          { const: 'value3', title: 'Third Option' },
        ],
      },
      legacyEnum: {
        type: 'string',
        description: 'Select one option (legacy)',
        enum: ['opt1', 'opt2', 'opt3'],
        enumNames: ['Option One', 'Option Two', 'Option Three'],
      },
      untitledMulti: {
        type: 'array',
        description: 'Select multiple options',
        items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
      },
      titledMulti: {
        type: 'array',
        description: 'Select multiple options with titles',
        items: {
          anyOf: [
            { const: 'value1', title: 'First Choice' },
            { const: 'value2', title: 'Second Choice' },
            { const: 'value3', title: 'Third Choice' },
          ],
        },
      },
    },
  },
});

export const reconnectionTool = defineTool({
  name: 'test_reconnection',
  description: "Closes its call's stream while it runs: the client resumes it with Last-Event-ID for the result.",
  inputSchema: noArguments,
  taskSupport: 'optional',
  async run(_args, ctx) {
    // First the client reads the stream's priming event, which gives it the id to resume from.
    await sleep(reportPauseMs * 2, undefined, { signal: ctx.signal });
    ctx.closeStream();
    await sleep(reportPauseMs * 2, undefined, { signal: ctx.signal });
    return textResult('Reconnection test completed.');
  },
});

/** Registered under its id, the address schema becomes a $defs entry that the tool's schema refers to. */
const addressSchema = z.object({ street: z.string().optional(), city: z.string().optional() }).meta({ id: 'address', $anchor: 'addressDef' });

/** Keywords of JSON Schema 2020-12 that clients must pass on untouched: composition, conditions, anchors. */
export const jsonSchema202012Tool = defineTool({
  name: 'json_schema_2020_12_tool',
  description: 'Tool with JSON Schema 2020-12 features',
  inputSchema: z
    .strictObject({
      name: z.string().optional(),
      address: addressSchema.optional(),
      contactMethod: z.enum(['phone', 'email']).optional(),
      phone: z.string().optional(),
      email: z.string().optional(),
    })
    .meta({
      allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
      if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
      then: { required: ['phone'] },
      else: { required: ['email'] },
    }),
  taskSupport: 'forbidden',
  async run(args) {
    return textResult(JSON.stringify(args));
  },
});

/** Publishes partial output as it works: numbered lines, or one large chunk after another. */
export const partialOutputTool = defineTool({
  name: 'fixture_partial_output',
  description: 'Writes `lines` numbered lines of partial output (or `chunks` chunks of 10,000 characters), `pauseMs` apart, then returns.',
  inputSchema: z.object({
    lines: z.number().int().min(0).max(1000).default(0),
    chunks: z.number().int().min(0).max(100).default(0),
    pauseMs: z.number().int().min(0).max(10_000).default(0),
  }),
  taskSupport: 'optional',
  async run({ lines, chunks, pauseMs }, ctx) {
    for (let line = 1; line <= lines; line++) {
      ctx.output(`line ${line}\n`);
      await sleep(pauseMs, undefined, { signal: ctx.signal });
    }
    for (let chunk = 1; chunk <= chunks; chunk++) {
      ctx.output(`${String(chunk).padStart(3, '0')}:${'x'.repeat(9_995)}\n`);
      await sleep(pauseMs, undefined, { signal: ctx.signal });
    }
    return textResult(`Wrote ${lines} lines and ${chunks} chunks.`);
  },
});

/** Waits, then asks a yes/no question: a question that comes while the task already runs. */
export const askLaterTool = defineTool({
  name: 'fixture_ask_later',
  description: 'Waits `waitMs`, then asks a yes/no question and returns the answer.',
  inputSchema: z.object({ waitMs: z.number().int().min(0).max(60_000) }),
  taskSupport: 'optional',
  async run({ waitMs }, ctx) {
    await sleep(waitMs, undefined, { signal: ctx.signal });
    const answer = await ctx.elicit(
      { message: 'Go on?', requestedSchema: { type: 'object', properties: { go: { type: 'boolean', title: 'Go on' } }, required: ['go'] } },
      { key: 'go' },
    );
    return textResult(`Answered ${answer.action}: ${JSON.stringify(answer.content ?? {})}`);
  },
});

export const fixtureTools = [
  observedDelayTool,
  askLaterTool,
  partialOutputTool,
  requiresTaskTool,
  logEveryLevelTool,
  simpleTextTool,
  imageContentTool,
  audioContentTool,
  embeddedResourceTool,
  multipleContentTypesTool,
  errorHandlingTool,
  loggingTool,
  progressTool,
  samplingTool,
  elicitationTool,
  elicitationDefaultsTool,
  elicitationEnumsTool,
  jsonSchema202012Tool,
  reconnectionTool,
];
