'use client';

import Link from 'next/link';
import { signIn } from 'next-auth/react';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import { Button } from '@/components/ui/button';
import { Field } from '@/components/ui/field';
import { safeCallbackPath } from '@/lib/auth/callback-url';
import { retryAfterFromError, tooManyAttemptsMessage } from '@/lib/auth/throttle-message';

export function SignInForm({
  callbackUrl,
  notice,
  providers,
  allowSignup,
}: {
  callbackUrl: string;
  notice?: string;
  providers: Array<{ id: string; name: string }>;
  allowSignup: boolean;
}) {
  const router = useRouter();
  const [error, setError] = useState<string>();
  const [pending, setPending] = useState(false);

  async function onSubmit(event: React.FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setPending(true);
    setError(undefined);
    const result = await signIn('credentials', {
      email: String(form.get('email') ?? ''),
      password: String(form.get('password') ?? ''),
      redirect: false,
    });
    setPending(false);
    if (!result || result.error) {
      const retryAfter = retryAfterFromError(result?.error);
      setError(retryAfter ? tooManyAttemptsMessage(retryAfter) : 'Wrong email or password.');
      return;
    }
    // Checked again here, against this page's own origin: the server's check is not the only one.
    router.replace(safeCallbackPath(callbackUrl, window.location.origin));
    router.refresh();
  }

  return (
    <div className="rounded-lg border border-zinc-200 bg-white p-6 shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
      <h1 className="mb-4 text-xl font-semibold">Sign in</h1>
      {notice && (
        <p role="status" className="mb-4 rounded-md bg-amber-50 p-3 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-200">
          {notice}
        </p>
      )}
      <form onSubmit={onSubmit} className="space-y-4" noValidate>
        <Field label="Email" name="email" type="email" autoComplete="email" required />
        <Field label="Password" name="password" type="password" autoComplete="current-password" required />
        {error && (
          <p role="alert" className="text-sm text-red-700 dark:text-red-400">
            {error}
          </p>
        )}
        <Button type="submit" className="w-full" disabled={pending}>
          {pending ? 'Signing in…' : 'Sign in'}
        </Button>
      </form>
      {providers.length > 0 && (
        <div className="mt-4 space-y-2 border-t border-zinc-200 pt-4 dark:border-zinc-800">
          {providers.map((provider) => (
            <Button key={provider.id} variant="secondary" className="w-full" onClick={() => signIn(provider.id, { callbackUrl })}>
              Continue with {provider.name}
            </Button>
          ))}
        </div>
      )}
      {allowSignup && (
        <p className="mt-4 text-center text-sm text-zinc-600 dark:text-zinc-400">
          No account?{' '}
          <Link href="/signup" className="font-medium text-blue-700 underline dark:text-blue-400">
            Create one
          </Link>
        </p>
      )}
    </div>
  );
}
