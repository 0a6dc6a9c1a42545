'use client';

import { useActionState } from 'react';
import { saveEmailAction, type SaveEmailState } from '@/app/(dashboard)/notifications/actions';
import { Button } from '@/components/ui/button';
import type { NotificationEventType } from '@/db/schema';
import { endEvents, questionEvents } from '@/lib/notify/messages';
import { EventChoices } from './event-choices';

export function EmailForm({ address, chosen, includeDetails }: { address: string; chosen: NotificationEventType[]; includeDetails: boolean }) {
  const [state, action, pending] = useActionState<SaveEmailState, FormData>(saveEmailAction, {});
  return (
    <form action={action} className="space-y-4">
      <p className="text-sm text-zinc-600 dark:text-zinc-400">
        Sent to <strong className="font-medium text-zinc-900 dark:text-zinc-100">{address}</strong>. When several arrive at once they come as one digest.
      </p>
      <EventChoices legend="Questions" types={questionEvents} chosen={chosen} idPrefix="email" />
      <EventChoices legend="Ends" types={endEvents} chosen={chosen} idPrefix="email" />
      <div className="flex items-center gap-2">
        <input type="checkbox" id="email-details" name="includeDetails" defaultChecked={includeDetails} className="h-4 w-4 rounded border-zinc-300 dark:border-zinc-700" />
        <label htmlFor="email-details" className="text-sm">
          Include the tool’s arguments and the question’s fields (they may hold what you would not put in an e-mail)
        </label>
      </div>
      <Button type="submit" disabled={pending}>
        {pending ? 'Saving…' : 'Save e-mail choices'}
      </Button>
      {state.error && (
        <p role="alert" className="text-sm text-red-700 dark:text-red-400">
          {state.error}
        </p>
      )}
      {state.saved && !pending && (
        <p role="status" className="text-sm text-emerald-700 dark:text-emerald-400">
          Saved.
        </p>
      )}
    </form>
  );
}
