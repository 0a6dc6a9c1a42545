'use client';

import { useRouter } from 'next/navigation';
import { startTransition, useEffect, useState } from 'react';

/** What /healthz answers, as far as this page reads it. */
interface Health {
  status: 'ok' | 'degraded';
  message?: string;
}

/**
 * Any page that could not be shown: instead of a bare error page, a banner that says whether storage is
 * the cause (asked of /healthz, which needs no database read to answer) and a way to try again.
 */
export default function PageError({ reset }: { error: Error & { digest?: string }; reset: () => void }) {
  const router = useRouter();
  const [health, setHealth] = useState<Health | null>(null);
  // Asked again every few seconds, so that what the page says follows the trouble as it goes on or ends.
  useEffect(() => {
    const ask = () =>
      fetch('/healthz', { cache: 'no-store' })
        .then((response) => response.json() as Promise<Health>)
        .then(setHealth)
        .catch(() => setHealth(null));
    void ask();
    const timer = setInterval(ask, 3000);
    return () => clearInterval(timer);
  }, []);
  return (
    <main className="mx-auto max-w-2xl px-4 py-10">
      <div role="alert" data-testid="storage-banner" className="rounded-md border border-amber-300 bg-amber-50 p-4 text-sm text-amber-950 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-100">
        <p className="font-medium">This page could not be shown.</p>
        <p className="mt-1">{health?.message ?? 'Something went wrong on the server.'} Try again in a few seconds.</p>
      </div>
      <button
        type="button"
        // The page's server data is fetched again, then shown in place of this.
        onClick={() =>
          startTransition(() => {
            router.refresh();
            reset();
          })
        }
        className="mt-4 rounded-md bg-zinc-900 px-3 py-2 text-sm font-medium text-white dark:bg-zinc-100 dark:text-zinc-900">
        Try again
      </button>
    </main>
  );
}
