'use client';

import { useState, useTransition } from 'react';
import { Button } from './button';

/**
 * A destructive button that asks first, in place: no accidental clicks, and keyboard focus lands on
 * the confirmation. `run` returns an error message, or nothing when it worked.
 */
export function ConfirmAction({
  label,
  labelName,
  question,
  confirmLabel,
  pendingLabel,
  keepLabel,
  run,
}: {
  label: string;
  labelName?: string;
  question?: string;
  confirmLabel: string;
  pendingLabel: string;
  keepLabel: string;
  run: () => Promise<string | undefined>;
}) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string>();
  const [pending, startTransition] = useTransition();

  if (!confirming) {
    return (
      <div className="space-y-1">
        <Button variant={question ? 'danger' : 'secondary'} onClick={() => setConfirming(true)} aria-label={labelName}>
          {label}
        </Button>
        {error && (
          <p role="alert" className="text-sm text-red-700 dark:text-red-400">
            {error}
          </p>
        )}
      </div>
    );
  }
  return (
    <div role="group" aria-label={`Confirm: ${labelName ?? label}`} className={`flex flex-wrap items-center justify-end gap-2 ${question ? 'rounded-md bg-red-50 p-3 dark:bg-red-950' : ''}`}>
      {question && <p className="text-sm text-red-900 dark:text-red-200">{question}</p>}
      <Button
        variant="danger"
        autoFocus
        disabled={pending}
        onClick={() =>
          startTransition(async () => {
            setError(await run());
            setConfirming(false);
          })
        }
      >
        {pending ? pendingLabel : confirmLabel}
      </Button>
      <Button variant={question ? 'secondary' : 'ghost'} onClick={() => setConfirming(false)} disabled={pending}>
        {keepLabel}
      </Button>
    </div>
  );
}
