import { z } from 'zod';
import type { TaskEngine } from '@/lib/tasks/engine';
import { ErrorCode, RpcError } from '../core/errors';

/** InputResponses: the client's answers, keyed by the keys of the input requests it was sent. */
export const inputResponsesSchema = z.record(z.string().max(256), z.record(z.string(), z.unknown())).refine((responses) => Object.keys(responses).length <= 100, {
  error: 'may answer at most 100 input requests at once',
});

/**
 * Answers a task's open questions from a client's InputResponses (a tasks/update, or the retry of a
 * plain call). A key that names no open question (never asked, answered already, in the dashboard or
 * by another copy, or withdrawn) is ignored; an answer may cover some questions and leave others open.
 * The first answer wins, exactly as between the dashboard and a legacy client. An answer that does not
 * fit its question is refused with -32602 naming the key; the others are taken.
 */
export async function answerInputResponses(
  engine: TaskEngine,
  taskId: string,
  userId: string,
  responses: Record<string, Record<string, unknown>>,
  label: string | null,
): Promise<void> {
  const keys = Object.keys(responses);
  if (keys.length === 0) return;
  const open = new Map((await engine.inputs.listForTask(taskId)).filter((input) => input.status === 'pending').map((input) => [input.key, input]));
  const refused: string[] = [];
  let fieldErrors: Record<string, Record<string, string> | undefined> = {};
  for (const key of keys) {
    const input = open.get(key);
    if (!input) continue;
    const outcome = await engine.inputs.answer(input.id, userId, responses[key], 'client', label);
    if (!outcome.ok && outcome.reason === 'invalid') {
      refused.push(`${key}: ${outcome.message}`);
      fieldErrors = { ...fieldErrors, [key]: outcome.fieldErrors };
    }
  }
  if (refused.length > 0) throw new RpcError(ErrorCode.InvalidParams, `Invalid params: inputResponses.${refused.join('; inputResponses.')}`, { fieldErrors });
}
