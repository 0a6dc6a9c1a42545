'use client';

import { signOut } from 'next-auth/react';
import { useTransition } from 'react';
import { signOutEverywhereAction } from '@/app/(auth)/actions';
import { Button } from '@/components/ui/button';

/** Ends the person's sessions on every browser and device, then signs this one out too. */
export function SignOutEverywhereButton() {
  const [pending, startTransition] = useTransition();
  return (
    <Button
      variant="ghost"
      disabled={pending}
      onClick={() =>
        startTransition(async () => {
          await signOutEverywhereAction();
          await signOut({ callbackUrl: '/signin' });
        })
      }
    >
      {pending ? 'Signing out…' : 'Sign out everywhere'}
    </Button>
  );
}
