import { approvalOf, type TaskInputRow } from '@/lib/tasks/inputs';
import { RelativeTime } from '@/components/ui/relative-time';
import { ApprovalButtons } from './approval-buttons';

/**
 * A call that waits for a person's approval: the server, the tool and every argument in full (wrapped,
 * never cut, since what is approved is exactly what runs), with Approve and Deny while it is open, and
 * who decided once it is not.
 */
export function Approval({ input }: { input: TaskInputRow }) {
  const { server, tool, arguments: args } = approvalOf(input);
  const question = `Approve ${tool} on ${server}?`;
  return (
    <div className="space-y-3" data-approval={input.status}>
      <p className="text-sm font-medium">{question}</p>
      <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-1 text-sm">
        <dt className="text-zinc-500 dark:text-zinc-400">Server</dt>
        <dd className="font-mono break-all" data-testid="approval-server">
          {server}
        </dd>
        <dt className="text-zinc-500 dark:text-zinc-400">Tool</dt>
        <dd className="font-mono break-all" data-testid="approval-tool">
          {tool}
        </dd>
      </dl>
      <div>
        <p className="mb-1 text-sm text-zinc-500 dark:text-zinc-400">Arguments</p>
        <pre
          tabIndex={0}
          role="region"
          aria-label={`Arguments of ${tool}`}
          data-testid="approval-arguments"
          className="rounded bg-zinc-50 p-3 font-mono text-xs whitespace-pre-wrap break-all dark:bg-zinc-950"
        >
          {JSON.stringify(args, null, 2)}
        </pre>
      </div>
      {input.status === 'pending' && <ApprovalButtons inputId={input.id} label={question} />}
      {input.status === 'answered' && (
        <p className="text-sm" data-input-status="answered">
          <span className="font-medium">
            {input.response?.decision === 'approve' ? 'Approved' : 'Denied'} in the dashboard{input.answeredByLabel ? ` by ${input.answeredByLabel}` : ''}
          </span>{' '}
          <span className="text-zinc-500 dark:text-zinc-400">{input.answeredAt && <RelativeTime at={input.answeredAt} />}</span>
        </p>
      )}
    </div>
  );
}
