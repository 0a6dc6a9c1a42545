'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useTransition } from 'react';
import { dismissReclaimedNoticeAction } from '@/app/(auth)/actions';
import { Button } from '@/components/ui/button';

/**
 * Said on every page after a GitHub or Google sign-in took the account back from a password someone
 * else set, until the person has read it: what went, and what they may want to set up again.
 */
export function ReclaimedNotice() {
  const router = useRouter();
  const [pending, startTransition] = useTransition();
  return (
    <div role="alert" className="border-b border-amber-200 bg-amber-50 text-sm text-amber-900 dark:border-amber-900 dark:bg-amber-950 dark:text-amber-200">
      <div className="mx-auto flex max-w-6xl flex-wrap items-center justify-between gap-3 px-4 py-2">
        <p>
          Someone had signed up with your address, and a password of theirs, before you signed in with GitHub or Google. That password is removed, and with it everything it could have
          set up: every other session, access token and connected app, and every webhook, subscribed browser and e-mail notification of this account.
          Set up again what you need under{' '}
          <Link href="/notifications" className="font-medium underline">
            Notifications
          </Link>{' '}
          and{' '}
          <Link href="/tokens" className="font-medium underline">
            Tokens
          </Link>
          .
        </p>
        <Button
          variant="ghost"
          disabled={pending}
          onClick={() =>
            startTransition(async () => {
              await dismissReclaimedNoticeAction();
              router.refresh();
            })
          }
        >
          Got it
        </Button>
      </div>
    </div>
  );
}
