'use client';

import { signOut } from 'next-auth/react';
import { useState, useTransition } from 'react';
import { signOutEverywhereAction } from '@/app/(auth)/actions';
import { Button } from '@/components/ui/button';
import { forgetThisBrowser } from '@/components/notifications/forget-this-browser';

/**
 * Ends the person's sessions on every browser and device, then signs this one out too. It asks first,
 * in place, and offers to end their access tokens and connected apps as well (clients signed in with
 * those are not browsers, and would otherwise keep working), and to remove their webhooks and e-mail
 * notifications (which would otherwise keep telling whoever set them up). Browsers subscribed to push
 * notifications stop with their sessions in any case.
 */
export function SignOutEverywhereButton() {
  const [confirming, setConfirming] = useState(false);
  const [alsoTokensAndApps, setAlsoTokensAndApps] = useState(false);
  const [alsoNotifications, setAlsoNotifications] = useState(false);
  const [failed, setFailed] = useState(false);
  const [pending, startTransition] = useTransition();

  if (!confirming) {
    return (
      <Button variant="ghost" onClick={() => setConfirming(true)}>
        Sign out everywhere
      </Button>
    );
  }
  return (
    <div
      role="group"
      aria-label="Confirm: Sign out everywhere"
      className="absolute right-0 top-full z-10 mt-2 w-80 space-y-3 rounded-md border border-zinc-200 bg-white p-4 text-sm shadow-lg dark:border-zinc-800 dark:bg-zinc-900"
    >
      <p>Every browser signed in as you is signed out, this one included.</p>
      <label className="flex items-start gap-2">
        <input type="checkbox" className="mt-0.5" checked={alsoTokensAndApps} onChange={(event) => setAlsoTokensAndApps(event.target.checked)} />
        <span>Also revoke my access tokens and disconnect my apps</span>
      </label>
      <p className="text-xs text-zinc-600 dark:text-zinc-400">
        {alsoTokensAndApps
          ? 'Every client using them stops at once, and has to be given a new token or connected again.'
          : 'Clients using your access tokens and connected apps keep working.'}
      </p>
      <label className="flex items-start gap-2">
        <input type="checkbox" className="mt-0.5" checked={alsoNotifications} onChange={(event) => setAlsoNotifications(event.target.checked)} />
        <span>Also remove my webhooks and e-mail notifications</span>
      </label>
      <p className="text-xs text-zinc-600 dark:text-zinc-400">
        {alsoNotifications
          ? 'Nothing is told of your tasks until you set it up again under Notifications, your preferences included.'
          : 'Browsers told of your tasks stop with their sessions; webhooks and e-mail keep being sent.'}
      </p>
      {failed && (
        <p role="alert" className="text-red-700 dark:text-red-400">
          Your session has already ended. Sign in again to do this.
        </p>
      )}
      <div className="flex justify-end gap-2">
        <Button variant="ghost" onClick={() => setConfirming(false)} disabled={pending}>
          Keep me signed in
        </Button>
        <Button
          variant="danger"
          autoFocus
          disabled={pending}
          onClick={() =>
            startTransition(async () => {
              // This browser's subscription first: once the sessions end, the server no longer hears from it.
              await forgetThisBrowser();
              const { ok } = await signOutEverywhereAction({ alsoTokensAndApps, alsoNotifications });
              if (!ok) return setFailed(true);
              await signOut({ callbackUrl: '/signin' });
            })
          }
        >
          {pending ? 'Signing out…' : 'Sign out everywhere'}
        </Button>
      </div>
    </div>
  );
}
