'use client';

import { useRouter } from 'next/navigation';
import { cancelTaskAction } from '@/app/(dashboard)/tasks/actions';
import { ConfirmAction } from '@/components/ui/confirm-action';

export function CancelTaskButton({ taskId }: { taskId: string }) {
  const router = useRouter();
  return (
    <ConfirmAction
      label="Cancel task"
      question="Cancel this task? Its work stops and the client sees it cancelled."
      confirmLabel="Yes, cancel task"
      pendingLabel="Cancelling…"
      keepLabel="Keep it running"
      run={async () => {
        const result = await cancelTaskAction(taskId);
        router.refresh();
        return result.ok ? undefined : result.message;
      }}
    />
  );
}
