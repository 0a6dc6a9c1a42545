'use client';

import { revokeTokenAction } from '@/app/(dashboard)/tokens/actions';
import { ConfirmAction } from '@/components/ui/confirm-action';

export function RevokeTokenButton({ tokenId, name }: { tokenId: string; name: string }) {
  return (
    <ConfirmAction
      label="Revoke"
      labelName={`Revoke token ${name}`}
      confirmLabel="Yes, revoke"
      pendingLabel="Revoking…"
      keepLabel="Keep"
      run={async () => (await revokeTokenAction(tokenId)).error}
    />
  );
}
