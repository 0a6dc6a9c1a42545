import { z } from 'zod';
import type { TaskEngine } from '@/lib/tasks/engine';
import { isLinkAccepted } from '../core/elicitation-modes';
import { ErrorCode, RpcError } from '../core/errors';
import { clientLabelOf, receivesLink, type ModernClient } from './protocol';

/** InputResponses: the client's answers, keyed by the keys of the input requests it was sent. */
export const inputResponsesSchema = z.record(z.string().max(256), z.record(z.string(), z.unknown())).refine((responses) => Object.keys(responses).length <= 100, {
  error: 'may answer at most 100 input requests at once',
});

/**
 * Answers a task's open questions from a client's InputResponses (a tasks/update, or the retry of a
 * plain call). A key that names no open question (never asked, answered already, in the dashboard or
 * by another copy, or withdrawn) is ignored; an answer may cover some questions and leave others open.
 * The first answer wins, exactly as between the dashboard and a legacy client. The answers are taken
 * all or none: one that does not fit its question is refused with -32602 naming its key (each misfit
 * is named, in `data.fieldErrors` too), and then none of the others is taken either.
 *
 * A question the client was sent as a link (it takes only URL-mode elicitation) is answered by its
 * decline or cancel; its accept is consent to open the task's page, where the person answers. Resolves
 * with the keys of the links accepted.
 */
export async function answerInputResponses(
  engine: TaskEngine,
  taskId: string,
  userId: string,
  responses: Record<string, Record<string, unknown>>,
  client: ModernClient,
): Promise<string[]> {
  const keys = Object.keys(responses);
  if (keys.length === 0) return [];
  const open = new Map((await engine.inputs.listForTask(taskId)).filter((input) => input.status === 'pending').map((input) => [input.key, input]));
  const linksAccepted: string[] = [];
  const answers = keys.flatMap((key) => {
    const input = open.get(key);
    if (!input) return [];
    if (receivesLink(client, input.kind) && isLinkAccepted(responses[key])) {
      linksAccepted.push(key);
      return [];
    }
    return [{ inputId: input.id, raw: responses[key] }];
  });
  const outcome = await engine.inputs.answerAll(userId, answers, 'client', clientLabelOf(client));
  if (outcome.ok) return linksAccepted;
  const refused = outcome.misfits.map((misfit) => `${misfit.input.key}: ${misfit.message}`);
  const fieldErrors = Object.fromEntries(outcome.misfits.map((misfit) => [misfit.input.key, misfit.fieldErrors]));
  throw new RpcError(
    ErrorCode.InvalidParams,
    `Invalid params: inputResponses.${refused.join('; inputResponses.')}; no answer of this request was taken, send them again once they fit`,
    { fieldErrors },
  );
}
