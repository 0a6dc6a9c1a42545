'use client';

import { useRouter } from 'next/navigation';
import { useEffect } from 'react';

const refreshEveryMs = 3000;

/**
 * Keeps the Servers page current while a server is starting or down: those changes are not task
 * events, so the dashboard's live stream does not carry them. Once every server is up, it stops.
 */
export function RefreshWhileChanging({ changing }: { changing: boolean }) {
  const router = useRouter();
  useEffect(() => {
    if (!changing) return;
    const timer = setInterval(() => router.refresh(), refreshEveryMs);
    return () => clearInterval(timer);
  }, [changing, router]);
  return null;
}
