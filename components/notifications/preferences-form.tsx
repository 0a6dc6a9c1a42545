'use client';

import { useActionState } from 'react';
import { savePreferencesAction, type SavePreferencesState } from '@/app/(dashboard)/notifications/actions';
import { Button } from '@/components/ui/button';
import { Field } from '@/components/ui/field';

export function PreferencesForm({ quietWhileLive, maxPerMinute, most }: { quietWhileLive: boolean; maxPerMinute: number; most: number }) {
  const [state, action, pending] = useActionState<SavePreferencesState, FormData>(savePreferencesAction, {});
  return (
    <form action={action} className="space-y-4" noValidate>
      <div className="flex items-start gap-2">
        <input type="checkbox" id="quiet-while-live" name="quietWhileLive" defaultChecked={quietWhileLive} className="mt-0.5 h-4 w-4 rounded border-zinc-300 dark:border-zinc-700" />
        <label htmlFor="quiet-while-live" className="text-sm">
          Quiet while I am watching: no e-mail or push about a task whose MCP client is connected live (it has a stream open), since that client
          shows its questions itself
        </label>
      </div>
      <div className="max-w-xs">
        <Field
          label="At most this many messages a minute"
          name="maxPerMinute"
          type="number"
          inputMode="numeric"
          min={1}
          max={most}
          defaultValue={maxPerMinute}
          hint="To each browser and to your e-mail; what comes beyond arrives as one digest."
          error={state.error}
        />
      </div>
      <Button type="submit" disabled={pending}>
        {pending ? 'Saving…' : 'Save preferences'}
      </Button>
      {state.saved && !pending && (
        <p role="status" className="text-sm text-emerald-700 dark:text-emerald-400">
          Saved.
        </p>
      )}
    </form>
  );
}
