'use client';

import { disconnectAppAction } from '@/app/(dashboard)/apps/actions';
import { ConfirmAction } from '@/components/ui/confirm-action';

export function DisconnectAppButton({ consentId, name }: { consentId: string; name: string }) {
  return (
    <ConfirmAction
      label="Disconnect"
      labelName={`Disconnect ${name}`}
      confirmLabel="Yes, disconnect"
      pendingLabel="Disconnecting…"
      keepLabel="Keep"
      run={async () => (await disconnectAppAction(consentId)).error}
    />
  );
}
