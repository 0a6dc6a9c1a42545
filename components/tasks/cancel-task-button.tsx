'use client';

import { useRouter } from 'next/navigation';
import { useState, useTransition } from 'react';
import { cancelTaskAction } from '@/app/(dashboard)/tasks/actions';
import { Button } from '@/components/ui/button';

/** "Cancel task", then a confirmation in place: no accidental cancels, keyboard-friendly. */
export function CancelTaskButton({ taskId }: { taskId: string }) {
  const router = useRouter();
  const [confirming, setConfirming] = useState(false);
  const [message, setMessage] = useState<string>();
  const [pending, startTransition] = useTransition();

  if (!confirming) {
    return (
      <div className="space-y-2">
        <Button variant="danger" onClick={() => setConfirming(true)}>
          Cancel task
        </Button>
        {message && (
          <p role="alert" className="text-sm text-red-700 dark:text-red-400">
            {message}
          </p>
        )}
      </div>
    );
  }
  return (
    <div role="group" aria-label="Confirm cancelling" className="flex flex-wrap items-center gap-2 rounded-md bg-red-50 p-3 dark:bg-red-950">
      <p className="text-sm text-red-900 dark:text-red-200">Cancel this task? Its work stops and the client sees it cancelled.</p>
      <Button
        variant="danger"
        autoFocus
        disabled={pending}
        onClick={() =>
          startTransition(async () => {
            const result = await cancelTaskAction(taskId);
            setConfirming(false);
            setMessage(result.ok ? undefined : result.message);
            router.refresh();
          })
        }
      >
        {pending ? 'Cancelling…' : 'Yes, cancel task'}
      </Button>
      <Button variant="secondary" onClick={() => setConfirming(false)} disabled={pending}>
        Keep it running
      </Button>
    </div>
  );
}
