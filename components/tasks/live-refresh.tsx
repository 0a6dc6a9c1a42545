'use client';

import { useRouter } from 'next/navigation';
import { useEffect, useState } from 'react';

const refreshEveryMs = 400;
const pollEveryMs = 2000;

/**
 * Keeps a server-rendered page live: the server pushes task changes over SSE and the page re-renders at
 * most a few times a second. When the stream drops, it polls until the stream is back.
 */
export function LiveRefresh() {
  const router = useRouter();
  const [mode, setMode] = useState<'connecting' | 'live' | 'polling'>('connecting');

  useEffect(() => {
    let scheduled: ReturnType<typeof setTimeout> | undefined;
    let poller: ReturnType<typeof setInterval> | undefined;
    const refresh = () => {
      scheduled ??= setTimeout(() => {
        scheduled = undefined;
        router.refresh();
      }, refreshEveryMs);
    };
    const source = new EventSource('/api/tasks/events');
    source.onopen = () => {
      setMode('live');
      if (poller) clearInterval(poller);
      poller = undefined;
      refresh();
    };
    source.onmessage = (event) => {
      if (JSON.parse(event.data).type !== 'ready') refresh();
    };
    source.onerror = () => {
      setMode('polling');
      poller ??= setInterval(() => router.refresh(), pollEveryMs);
    };
    return () => {
      source.close();
      if (poller) clearInterval(poller);
      if (scheduled) clearTimeout(scheduled);
    };
  }, [router]);

  return (
    <span className="inline-flex items-center gap-1.5 text-xs text-zinc-500 dark:text-zinc-400" data-live-mode={mode}>
      <span aria-hidden="true" className={`h-2 w-2 rounded-full ${mode === 'live' ? 'bg-emerald-500' : 'bg-zinc-400'}`} />
      {mode === 'live' ? 'Live' : mode === 'polling' ? 'Reconnecting… (refreshing every 2 s)' : 'Connecting…'}
    </span>
  );
}
