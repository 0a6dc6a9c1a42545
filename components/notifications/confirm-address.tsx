'use client';

import { useActionState } from 'react';
import { sendConfirmationLinkAction, type SendConfirmationState } from '@/app/(dashboard)/notifications/actions';
import { Button } from '@/components/ui/button';

/** Asks the person to prove their address before e-mail goes to it, with the button that mails the link. */
export function ConfirmAddress({ address, paused }: { address: string; paused: boolean }) {
  const [state, action, pending] = useActionState<SendConfirmationState, FormData>(sendConfirmationLinkAction, {});
  return (
    <form action={action} className="mb-6 space-y-3 rounded-md border border-amber-200 bg-amber-50 p-4 text-sm dark:border-amber-900 dark:bg-amber-950">
      <p className="font-medium text-amber-900 dark:text-amber-200">Confirm your address</p>
      <p className="text-amber-900 dark:text-amber-200">
        {paused ? 'E-mail is paused, its events waiting, until' : 'E-mail can be turned on once'} you confirm that{' '}
        <strong className="font-medium">{address}</strong> is yours: signing up does not check it. You get a link that works once, for an hour, while
        you are signed in here.
      </p>
      <Button type="submit" disabled={pending}>
        {pending ? 'Sending…' : 'Send confirmation link'}
      </Button>
      {state.error && (
        <p role="alert" className="text-red-700 dark:text-red-400">
          {state.error}
        </p>
      )}
      {state.sent && !pending && (
        <p role="status" className="text-emerald-700 dark:text-emerald-400">
          Sent to {state.sent}: open the link in it.
        </p>
      )}
    </form>
  );
}
