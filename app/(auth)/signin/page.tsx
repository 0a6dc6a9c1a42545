import { redirect } from 'next/navigation';
import { SignInForm } from '@/components/auth/sign-in-form';
import { oauthProviders } from '@/lib/auth/options';
import { getCurrentUser } from '@/lib/auth/session';
import { getEnv } from '@/lib/env';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Sign in · MCP Task Server' };

/** Only same-site paths: a callbackUrl must not send people elsewhere. */
function safeReturnPath(value: string | string[] | undefined): string {
  const path = Array.isArray(value) ? value[0] : value;
  if (!path) return '/tasks';
  try {
    const url = new URL(path, 'http://local');
    return url.origin === 'http://local' ? `${url.pathname}${url.search}` : '/tasks';
  } catch {
    return '/tasks';
  }
}

export default async function SignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const callbackUrl = safeReturnPath(params.callbackUrl);
  if (await getCurrentUser()) redirect(callbackUrl);
  const notice =
    params.reason === 'expired'
      ? 'Your session has expired. Sign in again to continue.'
      : params.error
        ? 'That sign-in did not work. Try again.'
        : undefined;
  return <SignInForm callbackUrl={callbackUrl} notice={notice} providers={oauthProviders()} allowSignup={getEnv().allowSignup} />;
}
