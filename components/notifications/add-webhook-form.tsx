'use client';

import { useActionState } from 'react';
import { addWebhookAction, type AddWebhookState } from '@/app/(dashboard)/notifications/actions';
import { Button } from '@/components/ui/button';
import { Field } from '@/components/ui/field';
import { OneTimeSecret } from '@/components/ui/one-time-secret';
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
        <OneTimeSecret
          note={`Webhook added for ${state.url}. Copy its signing secret now: it will not be shown again.`}
          id="new-webhook-secret"
          label="Signing secret"
          value={state.secret}
          copyLabel="Copy the signing secret"
        />
      )}
    </div>
  );
}
