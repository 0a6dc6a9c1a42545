'use client';

import { useActionState } from 'react';
import { createTokenAction, type CreateTokenState } from '@/app/(dashboard)/tokens/actions';
import { Button } from '@/components/ui/button';
import { CopyButton } from '@/components/ui/copy-button';
import { Field, inputClass } from '@/components/ui/field';

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
        <div className="rounded-md border border-emerald-200 bg-emerald-50 p-4 dark:border-emerald-900 dark:bg-emerald-950" role="status">
          <p className="mb-2 text-sm font-medium text-emerald-900 dark:text-emerald-200">
            Token “{state.name}” created. Copy it now: it will not be shown again.
          </p>
          <label htmlFor="new-token" className="mb-1 block text-sm font-medium">
            New token
          </label>
          <div className="flex gap-2">
            <input id="new-token" readOnly value={state.token} className={`${inputClass} font-mono`} onFocus={(event) => event.currentTarget.select()} />
            <CopyButton text={state.token} label="Copy the new token" />
          </div>
        </div>
      )}
    </div>
  );
}
