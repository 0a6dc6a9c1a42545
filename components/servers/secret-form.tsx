'use client';

import { useActionState } from 'react';
import { saveServerSecretAction, type ServerSecretState } from '@/app/(dashboard)/servers/actions';
import { Button } from '@/components/ui/button';
import { Field } from '@/components/ui/field';

/**
 * Where a person gives their own secret for a server that takes one. The field is never filled in:
 * a saved secret is not sent back to the browser, so it can only be replaced or removed.
 */
export function SecretForm({ id, server, header, template, connected }: { id: string; server: string; header: string; template: string; connected: boolean }) {
  const [state, action, pending] = useActionState<ServerSecretState, FormData>(saveServerSecretAction, {});
  const sentAs = `${header}: ${template.replace('{secret}', '<your secret>')}`;
  return (
    <div className="space-y-3">
      <form action={action} className="flex max-w-2xl flex-wrap items-start gap-3" noValidate>
        <input type="hidden" name="server" value={server} />
        <div className="min-w-56 flex-1">
          <Field
            id={id}
            label={connected ? 'Replace your secret' : 'Your secret'}
            name="secret"
            type="password"
            autoComplete="off"
            spellCheck={false}
            maxLength={4096}
            required
            error={state.error}
            hint={`Sent as “${sentAs}” on your own calls only. It is stored encrypted and never shown again.`}
          />
        </div>
        {/* Level with the field, below its label. */}
        <Button type="submit" disabled={pending} aria-label={`Save your secret for ${server}`} className="mt-6">
          {pending ? 'Saving…' : 'Save'}
        </Button>
      </form>
      {/* Only while it is saved: after a removal the form's state from the save would say otherwise. */}
      {state.saved && connected && !pending && (
        <p role="status" className="text-sm text-emerald-800 dark:text-emerald-300">
          Saved. Your calls of {server}’s tools now carry it.
        </p>
      )}
    </div>
  );
}
