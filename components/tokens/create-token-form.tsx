'use client';

import { useActionState } from 'react';
import { createTokenAction, type CreateTokenState } from '@/app/(dashboard)/tokens/actions';
import { Button } from '@/components/ui/button';
import { Field, inputClass } from '@/components/ui/field';
import { OneTimeSecret } from '@/components/ui/one-time-secret';

export function CreateTokenForm() {
  const [state, action, pending] = useActionState<CreateTokenState, FormData>(createTokenAction, {});
  return (
    <div className="space-y-4">
      <form action={action} className="flex flex-wrap items-end gap-3" noValidate>
        <div className="min-w-56 flex-1">
          <Field label="Token name" name="name" placeholder="e.g. Claude Code on my laptop" maxLength={100} required />
        </div>
        <div className="space-y-1">
          <label htmlFor="token-expires" className="block text-sm font-medium">
            Expires
          </label>
          <select id="token-expires" name="expires" defaultValue="never" className={inputClass}>
            <option value="never">Never</option>
            <option value="7">In 7 days</option>
            <option value="30">In 30 days</option>
            <option value="90">In 90 days</option>
            <option value="365">In a year</option>
          </select>
        </div>
        <Button type="submit" disabled={pending}>
          {pending ? 'Creating…' : 'Create token'}
        </Button>
      </form>
      {state.error && (
        <p role="alert" className="text-sm text-red-700 dark:text-red-400">
          {state.error}
        </p>
      )}
      {state.token && (
        <OneTimeSecret note={`Token “${state.name}” created. Copy it now: it will not be shown again.`} id="new-token" label="New token" value={state.token} copyLabel="Copy the new token" />
      )}
    </div>
  );
}
