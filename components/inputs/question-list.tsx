import type { TaskInputRow } from '@/lib/tasks/inputs';
import { describeFields } from '@/lib/tasks/elicitation';
import { JsonBlock } from '@/components/tasks/result-view';
import { RelativeTime } from '@/components/ui/relative-time';
import { Approval } from './approval';
import { ElicitationForm } from './elicitation-form';

function Answer({ input }: { input: TaskInputRow }) {
  const response = (input.response ?? {}) as { action?: string; content?: Record<string, unknown> };
  const who = input.answeredBy === 'dashboard' ? `in the dashboard${input.answeredByLabel ? ` by ${input.answeredByLabel}` : ''}` : `by the MCP client${input.answeredByLabel ? ` (${input.answeredByLabel})` : ''}`;
  const verb = input.kind === 'sampling' ? 'Answered' : response.action === 'decline' ? 'Declined' : response.action === 'cancel' ? 'Dismissed' : 'Answered';
  return (
    <div className="space-y-2" data-input-status="answered">
      <p className="text-sm">
        <span className="font-medium">
          {verb} {who}
        </span>{' '}
        <span className="text-zinc-500 dark:text-zinc-400">{input.answeredAt && <RelativeTime at={input.answeredAt} />}</span>
      </p>
      {input.kind === 'sampling' ? <JsonBlock value={response} /> : response.content && <JsonBlock value={response.content} />}
    </div>
  );
}

/**
 * A task's questions: open ones as forms (or a note while the client's model works), approvals with
 * Approve and Deny, closed ones with their answers.
 */
export function QuestionList({ inputs }: { inputs: TaskInputRow[] }) {
  return (
    <ul className="space-y-6">
      {inputs.map((input) => {
        if (input.kind === 'approval') {
          return (
            <li key={input.id} data-input-id={input.id} className="border-b border-zinc-100 pb-6 last:border-0 last:pb-0 dark:border-zinc-800">
              <Approval input={input} />
              {input.status === 'withdrawn' && (
                <p className="mt-2 text-sm text-zinc-500 dark:text-zinc-400" data-input-status="withdrawn">
                  Withdrawn: the task ended before anyone approved or denied it.
                </p>
              )}
            </li>
          );
        }
        const message = String(input.request.message ?? (input.kind === 'sampling' ? 'A request for the client’s model' : 'A question'));
        const fields = input.kind === 'elicitation' ? describeFields(input.request.requestedSchema) : null;
        return (
          <li key={input.id} data-input-id={input.id} className="border-b border-zinc-100 pb-6 last:border-0 last:pb-0 dark:border-zinc-800">
            {input.status === 'pending' && input.kind === 'sampling' && (
              <p className="text-sm" data-input-status="pending">
                <span aria-hidden="true">⏳ </span>Waiting on the MCP client’s model to answer a sampling request.
              </p>
            )}
            {input.status === 'pending' && fields?.ok && <ElicitationForm inputId={input.id} message={message} fields={fields.fields} />}
            {input.status === 'pending' && fields && !fields.ok && <p className="text-sm text-red-700">This question cannot be shown: {fields.message}</p>}
            {input.status !== 'pending' && input.kind === 'elicitation' && <p className="mb-2 whitespace-pre-wrap text-sm font-medium">{message}</p>}
            {input.status === 'answered' && <Answer input={input} />}
            {input.status === 'withdrawn' && (
              <p className="text-sm text-zinc-500 dark:text-zinc-400" data-input-status="withdrawn">
                Withdrawn: the task ended before anyone answered.
              </p>
            )}
          </li>
        );
      })}
    </ul>
  );
}
