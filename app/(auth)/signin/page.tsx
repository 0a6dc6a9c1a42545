import { redirect } from 'next/navigation';
import { SignInForm } from '@/components/auth/sign-in-form';
import { safeCallbackPath } from '@/lib/auth/callback-url';
import { oauthProviders } from '@/lib/auth/options';
import { getCurrentUser } from '@/lib/auth/session';
import { retryAfterFromError, tooManyAttemptsMessage } from '@/lib/auth/throttle-message';
import { getEnv } from '@/lib/env';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Sign in · MCP Task Server' };

const errorNotices: Record<string, string> = {
  OAuthEmailNotVerified:
    'Your provider did not confirm that email address. Verify it there (for GitHub: your primary email), then try again.',
  OAuthAccountLinkedElsewhere: 'That provider account already belongs to another user of this server.',
  SignupClosed: 'Sign-up is closed on this server, and no account has that email. Ask its operator for one.',
};

function noticeFor(params: Record<string, string | string[] | undefined>): string | undefined {
  if (params.reason === 'expired') return 'Your session has expired. Sign in again to continue.';
  const error = Array.isArray(params.error) ? params.error[0] : params.error;
  if (!error) return undefined;
  const retryAfter = retryAfterFromError(error);
  if (retryAfter) return tooManyAttemptsMessage(retryAfter);
  return errorNotices[error] ?? 'That sign-in did not work. Try again.';
}

export default async function SignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const callbackUrl = safeCallbackPath(params.callbackUrl, getEnv().APP_URL);
  if (await getCurrentUser()) redirect(callbackUrl);
  return <SignInForm callbackUrl={callbackUrl} notice={noticeFor(params)} providers={oauthProviders()} allowSignup={getEnv().allowSignup} />;
}
