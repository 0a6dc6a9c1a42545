import { z } from 'zod';
import { defineTool, textResult } from './define';

export const summarizeTool = defineTool({
  name: 'summarize',
  title: 'Summarize with your model',
  description:
    "Summarizes a text with the MCP client's own model (sampling/createMessage), so the server needs no model of its " +
    'own. The client must support sampling.',
  inputSchema: z.object({
    text: z.string().min(1).max(100_000).describe('The text to summarize.'),
    maxTokens: z.number().int().min(16).max(4000).optional().describe('Longest summary, in tokens (default 300).'),
  }),
  outputSchema: z.object({
    summary: z.string().describe('The summary.'),
    model: z.string().describe('The model that wrote it, as the client named it.'),
  }),
  // The client's model answers differently each time.
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  taskSupport: 'optional',
  resumable: true,
  requiresClient: 'sampling',
  async run({ text, maxTokens }, ctx) {
    ctx.status("Waiting for the client's model");
    const reply = await ctx.createMessage(
      {
        messages: [{ role: 'user', content: { type: 'text', text: `Summarize the following text in a few sentences:\n\n${text}` } }],
        systemPrompt: 'You write short, faithful summaries.',
        maxTokens: maxTokens ?? 300,
      },
      { key: 'summary' },
    );
    const content = reply.content as { type?: string; text?: string } | Array<{ type?: string; text?: string }>;
    const blocks = Array.isArray(content) ? content : [content];
    const summary = blocks
      .filter((block) => block?.type === 'text')
      .map((block) => block.text)
      .join('\n');
    if (!summary) return textResult('The client’s model returned no text.', true);
    return { ...textResult(summary), structuredContent: { summary, model: String(reply.model ?? '') } };
  },
});
