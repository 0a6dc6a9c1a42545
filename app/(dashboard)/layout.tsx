import Link from 'next/link';
import { ReclaimedNotice } from '@/components/auth/reclaimed-notice';
import { SignOutButton } from '@/components/auth/sign-out-button';
import { SignOutEverywhereButton } from '@/components/auth/sign-out-everywhere-button';
import { LiveRefresh } from '@/components/tasks/live-refresh';
import { NavLink } from '@/components/ui/nav-link';
import { PushMessages } from '@/components/notifications/push-messages';
import { getRuntime } from '@/lib/runtime';
import { countFailingWebhooks } from '@/db/queries/notifications';
import { getCurrentUser } from '@/lib/auth/session';
import { StorageBanner } from '@/components/ui/storage-banner';
import { storageHealth } from '@/lib/storage/health';
import { storageTroubleIn } from '@/lib/storage/trouble';

export default async function DashboardLayout({ children }: { children: React.ReactNode }) {
  // Each page checks the session itself too; this only fills the header.
  const user = await getCurrentUser();
  const storage = await storageHealth().report();
  // The header's counts are the least of a page: storage that cannot be read leaves them out, and says why.
  const [waiting, failingWebhooks] = user
    ? await Promise.all([getRuntime().engine.inputs.countWaitingForUser(user.id), countFailingWebhooks(user.id)]).catch((error: unknown) => {
        if (!storageTroubleIn(error)) throw error;
        return [0, 0];
      })
    : [0, 0];
  return (
    <div className="min-h-screen bg-zinc-50 dark:bg-zinc-950">
      <header className="border-b border-zinc-200 bg-white dark:border-zinc-800 dark:bg-zinc-900">
        <div className="mx-auto flex max-w-6xl flex-wrap items-center justify-between gap-x-6 gap-y-2 px-4 py-3">
          <Link href="/tasks" className="text-base font-semibold tracking-tight">
            MCP Task Server
          </Link>
          <nav aria-label="Main" className="order-last flex w-full flex-wrap gap-1 sm:order-none sm:w-auto sm:flex-1">
            <NavLink href="/tasks">Tasks</NavLink>
            <NavLink href="/inbox">
              Inbox
              {waiting > 0 && (
                <span className="ml-1.5 rounded-full bg-amber-500 px-1.5 py-0.5 text-xs font-semibold text-white" aria-label={`${waiting} waiting`} data-testid="inbox-count">
                  {waiting}
                </span>
              )}
            </NavLink>
            <NavLink href="/servers">Servers</NavLink>
            <NavLink href="/tokens">Tokens</NavLink>
            <NavLink href="/apps">Connected apps</NavLink>
            <NavLink href="/notifications">Notifications</NavLink>
            <NavLink href="/connect">Connect</NavLink>
          </nav>
          {user && (
            <div className="relative flex min-w-0 flex-wrap items-center gap-3">
              <LiveRefresh />
              <span className="max-w-48 truncate text-sm text-zinc-600 dark:text-zinc-400" title={user.email}>
                {user.email}
              </span>
              <SignOutButton />
              <SignOutEverywhereButton />
            </div>
          )}
        </div>
      </header>
      <StorageBanner report={storage} />
      {user?.reclaimedAt != null && <ReclaimedNotice />}
      {failingWebhooks > 0 && (
        <div role="alert" className="border-b border-red-200 bg-red-50 text-sm text-red-900 dark:border-red-900 dark:bg-red-950 dark:text-red-200">
          <p className="mx-auto max-w-6xl px-4 py-2">
            {failingWebhooks === 1 ? 'A webhook of yours is failing' : `${failingWebhooks} webhooks of yours are failing`}: events wait for it.{' '}
            <Link href="/notifications" className="font-medium underline">
              See and resume it
            </Link>
          </p>
        </div>
      )}
      <main className="mx-auto max-w-6xl px-4 py-6 sm:py-8">{children}</main>
      {user && <PushMessages />}
    </div>
  );
}
