import type { TaskInputRow } from '@/lib/tasks/inputs';

/**
 * The two modes of elicitation (since 2025-11-25). A client that shows forms is sent each question as the
 * tool asked it. A client that declared only URL mode is sent a link to the task's page in the dashboard
 * instead, where the person answers: its consent to open the link is no answer, and only its decline or
 * cancel answers the question. Form wins when a client declares both: the person answers where they are.
 */
export type ElicitationMode = 'form' | 'url';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The mode a client's capabilities let a question be sent in; undefined when it declared no elicitation it can take. */
export function elicitationModeOf(capabilities: unknown): ElicitationMode | undefined {
  const elicitation = isObject(capabilities) ? capabilities.elicitation : undefined;
  if (!isObject(elicitation)) return undefined;
  // `elicitation: {}` means form mode; a client that lists modes must list the ones it takes.
  if (Object.keys(elicitation).length === 0 || isObject(elicitation.form)) return 'form';
  return isObject(elicitation.url) ? 'url' : undefined;
}

/**
 * A question as a URL-mode elicitation: the task's page (from APP_URL; it asks the person to sign in,
 * so it carries nothing that would let anyone else in). 2025-11-25 names it with an `elicitationId`
 * (the question's id, which notifications/elicitation/complete repeats); 2026-07-28 has neither.
 */
export function linkToAnswer(input: Pick<TaskInputRow, 'id' | 'request'>, taskPageUrl: string, withElicitationId: boolean) {
  const question = typeof input.request.message === 'string' && input.request.message !== '' ? input.request.message : 'A task asks you a question';
  return {
    mode: 'url' as const,
    message: `${question} (answer it on the task's page in the dashboard)`,
    url: taskPageUrl,
    ...(withElicitationId ? { elicitationId: input.id } : {}),
  };
}

/** Whether a client's result for a link is its consent to open it: an acknowledgement, since the person answers on the page. */
export function isLinkAccepted(result: unknown): boolean {
  return isObject(result) && result.action === 'accept';
}
