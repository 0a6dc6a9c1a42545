import { z } from 'zod';
import { defineTool, personAnsweringTtlMs, textResult } from './define';

export const surveyTool = defineTool({
  name: 'survey',
  title: 'Survey',
  description:
    'Asks several questions at once, each answered on its own (in the MCP client or the dashboard), and returns ' +
    'every answer when all are in.',
  inputSchema: z.object({
    questions: z.array(z.string().min(1)).min(1).max(10).describe('The questions, each answered separately.'),
  }),
  outputSchema: z.object({
    answers: z.array(
      z.object({
        question: z.string(),
        action: z.enum(['accept', 'decline', 'cancel']),
        answer: z.string().nullable().describe('The answer; null when the question was declined or dismissed.'),
        answeredBy: z.enum(['client', 'dashboard']),
      }),
    ),
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  taskSupport: 'optional',
  minTtlMs: personAnsweringTtlMs,
  resumable: true,
  async run({ questions }, ctx) {
    const answers = await Promise.all(
      questions.map((question, index) =>
        ctx.elicit(
          { message: question, requestedSchema: { type: 'object', properties: { answer: { type: 'string', title: 'Answer' } }, required: ['answer'] } },
          { key: `question-${index + 1}` },
        ),
      ),
    );
    const lines = answers.map((answer, index) => {
      const reply = answer.action === 'accept' ? String(answer.content?.answer) : `(${answer.action === 'decline' ? 'declined' : 'dismissed'})`;
      return `${index + 1}. ${questions[index]} ${reply}`;
    });
    return {
      ...textResult(lines.join('\n')),
      structuredContent: {
        answers: answers.map((answer, index) => ({
          question: questions[index],
          action: answer.action,
          answer: answer.action === 'accept' ? String(answer.content?.answer) : null,
          answeredBy: answer.answeredBy,
        })),
      },
    };
  },
});
