import Link from 'next/link';
import { redirect } from 'next/navigation';
import { SignUpForm } from '@/components/auth/sign-up-form';
import { getCurrentUser } from '@/lib/auth/session';
import { getEnv } from '@/lib/env';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Create an account · MCP Task Server' };

export default async function SignUpPage() {
  if (await getCurrentUser()) redirect('/tasks');
  if (!getEnv().allowSignup) {
    return (
      <div className="rounded-lg border border-zinc-200 bg-white p-6 shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
        <h1 className="mb-2 text-xl font-semibold">Sign-up is closed</h1>
        <p className="text-sm text-zinc-600 dark:text-zinc-400">
          This server does not take new accounts. Ask its operator for one, then{' '}
          <Link href="/signin" className="font-medium text-blue-700 underline dark:text-blue-400">
            sign in
          </Link>
          .
        </p>
      </div>
    );
  }
  return <SignUpForm />;
}
