'use client';

import { signOut } from 'next-auth/react';
import { useTransition } from 'react';
import { Button } from '@/components/ui/button';
import { forgetThisBrowser } from '@/components/notifications/forget-this-browser';

export function SignOutButton() {
  const [pending, startTransition] = useTransition();
  return (
    <Button
      variant="ghost"
      disabled={pending}
      onClick={() =>
        startTransition(async () => {
          await forgetThisBrowser();
          await signOut({ callbackUrl: '/signin' });
        })
      }
    >
      {pending ? 'Signing out…' : 'Sign out'}
    </Button>
  );
}
