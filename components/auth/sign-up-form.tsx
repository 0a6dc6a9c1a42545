'use client';

import Link from 'next/link';
import { signIn } from 'next-auth/react';
import { useRouter } from 'next/navigation';
import { useActionState, useEffect, useRef } from 'react';
import { signUpAction, type SignUpState } from '@/app/(auth)/actions';
import { Button } from '@/components/ui/button';
import { Field } from '@/components/ui/field';

export function SignUpForm() {
  const router = useRouter();
  const [state, action, pending] = useActionState<SignUpState, FormData>(signUpAction, { ok: false, errors: {} });
  const credentials = useRef<{ email: string; password: string }>(null);

  useEffect(() => {
    if (!state.ok || !credentials.current) return;
    void signIn('credentials', { ...credentials.current, redirect: false }).then((result) => {
      router.replace(result?.ok ? '/tasks' : '/signin');
      router.refresh();
    });
  }, [state, router]);

  return (
    <div className="rounded-lg border border-zinc-200 bg-white p-6 shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
      <h1 className="mb-4 text-xl font-semibold">Create an account</h1>
      <form
        action={action}
        onSubmit={(event) => {
          const form = new FormData(event.currentTarget);
          credentials.current = { email: String(form.get('email') ?? ''), password: String(form.get('password') ?? '') };
        }}
        className="space-y-4"
        noValidate
      >
        <Field label="Name (optional)" name="name" autoComplete="name" error={state.errors.name} />
        <Field label="Email" name="email" type="email" autoComplete="email" required error={state.errors.email} />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          hint="At least 8 characters."
          error={state.errors.password}
        />
        {state.errors.form && (
          <p role="alert" className="text-sm text-red-700 dark:text-red-400">
            {state.errors.form}
          </p>
        )}
        <Button type="submit" className="w-full" disabled={pending || state.ok}>
          {pending || state.ok ? 'Creating account…' : 'Create account'}
        </Button>
      </form>
      <p className="mt-4 text-center text-sm text-zinc-600 dark:text-zinc-400">
        Already have an account?{' '}
        <Link href="/signin" className="font-medium text-blue-700 underline dark:text-blue-400">
          Sign in
        </Link>
      </p>
    </div>
  );
}
