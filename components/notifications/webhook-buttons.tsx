'use client';

import { useState, useTransition } from 'react';
import { removeTargetAction, resumeWebhookAction, testWebhookAction } from '@/app/(dashboard)/notifications/actions';
import { Button } from '@/components/ui/button';
import { ConfirmAction } from '@/components/ui/confirm-action';

export function WebhookButtons({ id, url, failing }: { id: string; url: string; failing: boolean }) {
  const [message, setMessage] = useState<{ text: string; error: boolean }>();
  const [pending, startTransition] = useTransition();
  const run = (action: (id: string) => Promise<{ error?: string; result?: string }>, done: string) =>
    startTransition(async () => {
      const outcome = await action(id);
      setMessage(outcome.error ? { text: outcome.error, error: true } : { text: outcome.result ?? done, error: false });
    });
  return (
    <div className="space-y-2">
      <div className="flex flex-wrap gap-2">
        <Button variant="secondary" disabled={pending} onClick={() => run(testWebhookAction, 'Sent.')} aria-label={`Send a test event to ${url}`}>
          Send test event
        </Button>
        {failing && (
          <Button disabled={pending} onClick={() => run(resumeWebhookAction, 'Resumed: delivery starts again from the event that failed.')} aria-label={`Resume ${url}`}>
            Resume
          </Button>
        )}
        <ConfirmAction
          label="Remove"
          labelName={`Remove webhook ${url}`}
          confirmLabel="Yes, remove"
          pendingLabel="Removing…"
          keepLabel="Keep"
          run={async () => (await removeTargetAction(id)).error}
        />
      </div>
      {message && (
        <p role={message.error ? 'alert' : 'status'} className={`text-sm ${message.error ? 'text-red-700 dark:text-red-400' : 'text-emerald-700 dark:text-emerald-400'}`}>
          {message.text}
        </p>
      )}
    </div>
  );
}
