'use client';

import { useRouter } from 'next/navigation';
import { useEffect, useState, useTransition } from 'react';
import { removeTargetAction, subscribeBrowserAction } from '@/app/(dashboard)/notifications/actions';
import { Button } from '@/components/ui/button';
import { ConfirmAction } from '@/components/ui/confirm-action';
import { RelativeTime } from '@/components/ui/relative-time';
import type { NotificationEventType } from '@/db/schema';
import { endEvents, eventLabels, questionEvents } from '@/lib/notify/messages';

export interface BrowserSubscription {
  id: string;
  endpoint: string;
  browser: string;
  events: NotificationEventType[];
  createdAt: number;
}

type Support = 'checking' | 'unsupported' | 'denied' | 'ready';

/** The VAPID public key as the bytes PushManager.subscribe wants. */
function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const text = atob(base64url.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (base64url.length % 4)) % 4));
  const bytes = new Uint8Array(new ArrayBuffer(text.length));
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/** A short name for this browser, so that the person can tell their subscriptions apart. */
function browserName(): string {
  const agent = navigator.userAgent;
  const name = /Edg\//.test(agent) ? 'Edge' : /Firefox\//.test(agent) ? 'Firefox' : /Chrome\//.test(agent) ? 'Chrome' : /Safari\//.test(agent) ? 'Safari' : 'Browser';
  const system = /Android/.test(agent) ? 'Android' : /iPhone|iPad/.test(agent) ? 'iOS' : /Mac OS X/.test(agent) ? 'macOS' : /Windows/.test(agent) ? 'Windows' : /Linux/.test(agent) ? 'Linux' : '';
  return system ? `${name} on ${system}` : name;
}

export function PushControls({ vapidPublicKey, subscriptions }: { vapidPublicKey: string; subscriptions: BrowserSubscription[] }) {
  const router = useRouter();
  const [support, setSupport] = useState<Support>('checking');
  const [thisEndpoint, setThisEndpoint] = useState<string | null>(null);
  const [events, setEvents] = useState<NotificationEventType[]>([...questionEvents]);
  const [message, setMessage] = useState<{ text: string; error: boolean }>();
  const [pending, startTransition] = useTransition();

  useEffect(() => {
    if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) {
      setSupport('unsupported');
      return;
    }
    setSupport(Notification.permission === 'denied' ? 'denied' : 'ready');
    void navigator.serviceWorker
      .getRegistration('/')
      .then((registration) => registration?.pushManager.getSubscription())
      .then((subscription) => setThisEndpoint(subscription?.endpoint ?? null))
      .catch(() => setThisEndpoint(null));
  }, []);

  const turnOn = () =>
    startTransition(async () => {
      setMessage(undefined);
      // Asked only now, after the person's click: never on load.
      const permission = await Notification.requestPermission();
      if (permission !== 'granted') {
        setSupport(permission === 'denied' ? 'denied' : 'ready');
        setMessage({ text: 'Notifications were not allowed, so this browser cannot be told.', error: true });
        return;
      }
      try {
        const registration = await navigator.serviceWorker.register('/sw.js', { scope: '/' });
        await navigator.serviceWorker.ready;
        const subscription =
          (await registration.pushManager.getSubscription()) ??
          (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(vapidPublicKey) }));
        const saved = await subscribeBrowserAction(subscription.toJSON() as never, events, browserName());
        if (saved.error) {
          setMessage({ text: saved.error, error: true });
          return;
        }
        setThisEndpoint(subscription.endpoint);
        setMessage({ text: 'This browser will be told.', error: false });
        router.refresh();
      } catch (error) {
        setMessage({ text: `This browser could not subscribe with its push service: ${error instanceof Error ? error.message : String(error)}`, error: true });
      }
    });

  const toggle = (type: NotificationEventType, on: boolean) => setEvents((current) => (on ? [...current, type] : current.filter((entry) => entry !== type)));

  return (
    <div className="space-y-4">
      {support === 'unsupported' && <p className="text-sm text-zinc-600 dark:text-zinc-400">This browser cannot receive push notifications.</p>}
      {support === 'denied' && (
        <p className="text-sm text-amber-700 dark:text-amber-400">Notifications are blocked for this site: allow them in the browser’s site settings, then come back.</p>
      )}
      {support === 'ready' && (
        <div className="space-y-3">
          <fieldset className="space-y-2">
            <legend className="text-sm font-medium">Tell this browser when</legend>
            {[...questionEvents, ...endEvents].map((type) => (
              <div key={type} className="flex items-center gap-2">
                <input
                  type="checkbox"
                  id={`push-${type}`}
                  checked={events.includes(type)}
                  onChange={(event) => toggle(type, event.currentTarget.checked)}
                  className="h-4 w-4 rounded border-zinc-300 dark:border-zinc-700"
                />
                <label htmlFor={`push-${type}`} className="text-sm">
                  {eventLabels[type]}
                </label>
              </div>
            ))}
          </fieldset>
          <Button onClick={turnOn} disabled={pending || events.length === 0}>
            {pending ? 'Turning on…' : thisEndpoint ? 'Update this browser' : 'Notify this browser'}
          </Button>
        </div>
      )}
      {message && (
        <p role={message.error ? 'alert' : 'status'} className={`text-sm ${message.error ? 'text-red-700 dark:text-red-400' : 'text-emerald-700 dark:text-emerald-400'}`}>
          {message.text}
        </p>
      )}
      {subscriptions.length === 0 ? (
        <p className="text-sm text-zinc-600 dark:text-zinc-400">No browser is subscribed.</p>
      ) : (
        <ul className="divide-y divide-zinc-100 dark:divide-zinc-800" aria-label="Subscribed browsers">
          {subscriptions.map((subscription) => (
            <li key={subscription.id} className="flex flex-wrap items-center justify-between gap-3 py-3" data-browser-subscription={subscription.id}>
              <div className="space-y-0.5">
                <p className="text-sm font-medium">
                  {subscription.browser}
                  {subscription.endpoint === thisEndpoint && <span className="ml-2 text-xs font-normal text-emerald-700 dark:text-emerald-400">this browser</span>}
                </p>
                <p className="text-xs text-zinc-600 dark:text-zinc-400">
                  Since <RelativeTime at={subscription.createdAt} /> · {subscription.events.join(', ')}
                </p>
              </div>
              <ConfirmAction
                label="Remove"
                labelName={`Stop telling ${subscription.browser}`}
                confirmLabel="Yes, remove"
                pendingLabel="Removing…"
                keepLabel="Keep"
                run={async () => (await removeTargetAction(subscription.id)).error}
              />
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
