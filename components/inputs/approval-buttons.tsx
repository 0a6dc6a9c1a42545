'use client';

import { useActionState } from 'react';
import { decideApprovalAction, type DecideState } from '@/app/(dashboard)/tasks/[taskId]/input-actions';
import { Button } from '@/components/ui/button';

/** Approve and Deny, for a call that waits for a person; the button pressed is the answer. */
export function ApprovalButtons({ inputId, label }: { inputId: string; label: string }) {
  const [state, action, pending] = useActionState<DecideState, FormData>(decideApprovalAction.bind(null, inputId), { ok: false });
  return (
    <form action={action} className="space-y-2" aria-label={label}>
      <div className="grid grid-cols-2 gap-2 sm:flex sm:flex-wrap">
        <Button type="submit" name="decision" value="approve" disabled={pending} className="min-h-11 sm:min-w-24">
          Approve
        </Button>
        <Button type="submit" name="decision" value="deny" variant="danger" disabled={pending} className="min-h-11 sm:min-w-24">
          Deny
        </Button>
      </div>
      {state.message && (
        <p role="alert" className="text-sm text-red-700 dark:text-red-400">
          {state.message}
        </p>
      )}
    </form>
  );
}
