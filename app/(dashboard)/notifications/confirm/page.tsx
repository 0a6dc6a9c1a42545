import Link from 'next/link';
import { Card } from '@/components/ui/card';
import { requireUser } from '@/lib/auth/session';
import { confirmationPath, confirmEmailAddress } from '@/lib/notify/email-proof';
import { getRuntime } from '@/lib/runtime';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Confirm your address · MCP Task Server' };

/**
 * Where a confirmation e-mail's link leads. Signed in only (a mail scanner that follows the link meets
 * the sign-in page), and as the account the link was sent for.
 */
export default async function ConfirmEmailPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const token = typeof params.token === 'string' ? params.token : undefined;
  const user = await requireUser(token ? `${confirmationPath}?${new URLSearchParams({ token })}` : confirmationPath);
  const result = await confirmEmailAddress(user, token);
  // E-mail held for the address may go now.
  if (result.ok) getRuntime().notifier.wake();
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold tracking-tight">Confirm your address</h1>
      <Card>
        <p role={result.ok ? 'status' : 'alert'} className={`text-sm ${result.ok ? 'text-emerald-700 dark:text-emerald-400' : 'text-red-700 dark:text-red-400'}`}>
          {result.message}
        </p>
        <p className="mt-4 text-sm">
          <Link href="/notifications" className="font-medium underline">
            Go to Notifications
          </Link>
        </p>
      </Card>
    </div>
  );
}
