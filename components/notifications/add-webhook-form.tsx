'use client';

import { useActionState } from 'react';
import { addWebhookAction, type AddWebhookState } from '@/app/(dashboard)/notifications/actions';
import { Button } from '@/components/ui/button';
import { CopyButton } from '@/components/ui/copy-button';
import { Field, inputClass } from '@/components/ui/field';
import { endEvents, questionEvents } from '@/lib/notify/messages';
import { EventChoices } from './event-choices';

export function AddWebhookForm() {
  const [state, action, pending] = useActionState<AddWebhookState, FormData>(addWebhookAction, {});
  return (
    <div className="space-y-4">
      <form action={action} className="space-y-4" noValidate>
        <Field label="Endpoint URL" name="url" type="url" placeholder="https://example.com/hooks/tasks" maxLength={2000} required error={state.error} />
        <EventChoices legend="Questions" types={questionEvents} chosen={questionEvents} idPrefix="webhook" />
        <EventChoices legend="Ends" types={endEvents} chosen={endEvents} idPrefix="webhook" />
        <Button type="submit" disabled={pending}>
          {pending ? 'Adding…' : 'Add webhook'}
        </Button>
      </form>
      {state.secret && (
        <div className="rounded-md border border-emerald-200 bg-emerald-50 p-4 dark:border-emerald-900 dark:bg-emerald-950" role="status">
          <p className="mb-2 text-sm font-medium text-emerald-900 dark:text-emerald-200">
            Webhook added for {state.url}. Copy its signing secret now: it will not be shown again.
          </p>
          <label htmlFor="new-webhook-secret" className="mb-1 block text-sm font-medium">
            Signing secret
          </label>
          <div className="flex gap-2">
            <input id="new-webhook-secret" readOnly value={state.secret} className={`${inputClass} font-mono`} onFocus={(event) => event.currentTarget.select()} />
            <CopyButton text={state.secret} label="Copy the signing secret" />
          </div>
        </div>
      )}
    </div>
  );
}
