import { z } from 'zod';
import { defineTool, personAnsweringTtlMs, textResult, type ElicitRequest } from './define';

// The bounds are those of an elicitation (lib/tasks/elicitation.ts), checked here so a call beyond them is refused at once.
export const askHumanTool = defineTool({
  name: 'ask_human',
  title: 'Ask a human',
  description:
    'Asks the person behind this task a question and waits for the answer, given in their MCP client or in the ' +
    'dashboard. With choices, they pick one; with fields (an elicitation schema\u2019s properties), they fill a form.',
  inputSchema: z.object({
    question: z.string().min(1).describe('The question to ask.'),
    choices: z.array(z.string().min(1).max(500)).min(1).max(100).optional().describe('Possible answers to choose from (at most 100).'),
    fields: z
      .record(z.string(), z.record(z.string(), z.unknown()))
      .refine((fields) => Object.keys(fields).length <= 50, { error: 'at most 50 fields' })
      .optional()
      .describe('Form fields: an object of elicitation property schemas (string, number, integer, boolean, enum, multi-select); all required.'),
  }),
  outputSchema: z.object({
    action: z.enum(['accept', 'decline', 'cancel']).describe('What the person did: answered, declined, or dismissed the question.'),
    answeredBy: z.enum(['client', 'dashboard']).describe('Where they did it.'),
    content: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]))
      .optional()
      .describe('Their answers, by field ("answer" without fields); only when they answered.'),
  }),
  // It asks a person, and each call asks again.
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  taskSupport: 'optional',
  minTtlMs: personAnsweringTtlMs,
  resumable: true,
  async run({ question, choices, fields }, ctx) {
    const answer = await ctx.elicit(questionFor(question, choices, fields), { key: 'answer' });
    const who = answer.answeredBy === 'dashboard' ? 'in the dashboard' : 'in the MCP client';
    const structuredContent = { action: answer.action, answeredBy: answer.answeredBy, ...(answer.content ? { content: answer.content } : {}) };
    if (answer.action === 'decline') return { ...textResult(`The person declined to answer (${who}).`), structuredContent };
    if (answer.action === 'cancel') return { ...textResult(`The person dismissed the question without answering (${who}).`), structuredContent };
    const content = answer.content ?? {};
    const text =
      fields === undefined
        ? `Answer (given ${who}): ${String(content.answer)}`
        : `Answers (given ${who}):\n${Object.entries(content)
            .map(([name, value]) => `${name}: ${Array.isArray(value) ? value.join(', ') : String(value)}`)
            .join('\n')}`;
    return { ...textResult(text), structuredContent };
  },
});

function questionFor(question: string, choices?: string[], fields?: Record<string, Record<string, unknown>>): ElicitRequest {
  if (fields) {
    return { message: question, requestedSchema: { type: 'object', properties: fields, required: Object.keys(fields) } };
  }
  const answer = choices ? { type: 'string', title: 'Answer', enum: choices } : { type: 'string', title: 'Answer', minLength: 1 };
  return { message: question, requestedSchema: { type: 'object', properties: { answer }, required: ['answer'] } };
}
