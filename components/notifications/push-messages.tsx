'use client';

import Link from 'next/link';
import { useEffect, useState } from 'react';
import type { PushMessage } from '@/lib/notify/messages';

/**
 * While a dashboard page is open and visible, the service worker hands push messages here instead of
 * showing a system notification: they appear in the page, each with a link to its task. The page says
 * it showed one; when no page does (it was leaving, or hidden meanwhile), the worker shows a notification.
 */
export function PushMessages() {
  const [messages, setMessages] = useState<PushMessage[]>([]);
  useEffect(() => {
    if (!('serviceWorker' in navigator)) return;
    const receive = (event: MessageEvent) => {
      const data = event.data as { type?: string; message?: PushMessage } | null;
      if (data?.type !== 'task-push' || !data.message) return;
      const message = data.message;
      if (document.visibilityState === 'visible') event.ports[0]?.postMessage({ type: 'task-push-shown' });
      setMessages((current) => [message, ...current.filter((entry) => entry.tag !== message.tag)].slice(0, 3));
    };
    navigator.serviceWorker.addEventListener('message', receive);
    return () => navigator.serviceWorker.removeEventListener('message', receive);
  }, []);
  return (
    <div role="status" aria-live="polite" className="fixed right-4 bottom-4 z-50 w-80 max-w-[calc(100vw-2rem)] space-y-2">
      {messages.map((message) => {
        const url = new URL(message.url, window.location.origin);
        const local = url.origin === window.location.origin ? `${url.pathname}${url.search}` : '/inbox';
        return (
          <div key={message.tag} className="rounded-lg border border-amber-300 bg-amber-50 p-3 text-sm shadow-lg dark:border-amber-800 dark:bg-amber-950" data-push-message={message.tag}>
            <p className="font-semibold text-amber-950 dark:text-amber-100">{message.title}</p>
            {message.body && <p className="mt-1 text-amber-900 dark:text-amber-200">{message.body}</p>}
            <div className="mt-2 flex gap-3">
              <Link href={local} className="font-medium text-amber-950 underline dark:text-amber-100" onClick={() => setMessages((current) => current.filter((entry) => entry !== message))}>
                {message.question ? 'Answer it' : 'Open'}
              </Link>
              <button type="button" className="text-amber-900 dark:text-amber-200" onClick={() => setMessages((current) => current.filter((entry) => entry !== message))}>
                Dismiss
              </button>
            </div>
          </div>
        );
      })}
    </div>
  );
}
