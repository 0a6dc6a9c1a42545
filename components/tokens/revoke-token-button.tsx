'use client';

import { useState, useTransition } from 'react';
import { revokeTokenAction } from '@/app/(dashboard)/tokens/actions';
import { Button } from '@/components/ui/button';

export function RevokeTokenButton({ tokenId, name }: { tokenId: string; name: string }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string>();
  const [pending, startTransition] = useTransition();
  if (!confirming) {
    return (
      <>
        <Button variant="secondary" onClick={() => setConfirming(true)} aria-label={`Revoke token ${name}`}>
          Revoke
        </Button>
        {error && (
          <p role="alert" className="mt-1 text-xs text-red-700 dark:text-red-400">
            {error}
          </p>
        )}
      </>
    );
  }
  return (
    <div role="group" aria-label={`Confirm revoking ${name}`} className="flex flex-wrap justify-end gap-2">
      <Button
        variant="danger"
        autoFocus
        disabled={pending}
        onClick={() =>
          startTransition(async () => {
            const result = await revokeTokenAction(tokenId);
            setError(result.error);
            setConfirming(false);
          })
        }
      >
        {pending ? 'Revoking…' : 'Yes, revoke'}
      </Button>
      <Button variant="ghost" onClick={() => setConfirming(false)} disabled={pending}>
        Keep
      </Button>
    </div>
  );
}
