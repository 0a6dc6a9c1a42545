'use client';

import { removeServerSecretAction } from '@/app/(dashboard)/servers/actions';
import { ConfirmAction } from '@/components/ui/confirm-action';

export function RemoveSecretButton({ server }: { server: string }) {
  return (
    <ConfirmAction
      label="Remove"
      labelName={`Remove your secret for ${server}`}
      confirmLabel="Yes, remove"
      pendingLabel="Removing…"
      keepLabel="Keep"
      run={async () => (await removeServerSecretAction(server)).error}
    />
  );
}
