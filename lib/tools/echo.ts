import { z } from 'zod';
import { defineTool, textResult } from './define';

export const echoTool = defineTool({
  name: 'echo',
  title: 'Echo',
  description: 'Returns the given text at once.',
  inputSchema: z.object({ text: z.string().describe('The text to return.') }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  taskSupport: 'forbidden',
  async run({ text }) {
    return textResult(text);
  },
});
