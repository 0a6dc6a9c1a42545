import { AddWebhookForm } from '@/components/notifications/add-webhook-form';
import { ConfirmAddress } from '@/components/notifications/confirm-address';
import { EmailForm } from '@/components/notifications/email-form';
import { PreferencesForm } from '@/components/notifications/preferences-form';
import { PushControls } from '@/components/notifications/push-controls';
import { WebhookButtons } from '@/components/notifications/webhook-buttons';
import { Card } from '@/components/ui/card';
import { RelativeTime } from '@/components/ui/relative-time';
import { getNotificationPreferences, listDeliveryAttempts, listNotificationTargets } from '@/db/queries/notifications';
import { requireUser } from '@/lib/auth/session';
import { getEnv } from '@/lib/env';
import { emailProven, maxPerMinuteChoice } from '@/lib/notify/targets';
import { getVapidKeys } from '@/lib/notify/vapid';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Notifications · MCP Task Server' };

/** Deliveries shown per webhook. */
const logLength = 10;

/** A span of time as a person says it: 30 seconds, 5 minutes, 24 hours. */
function spanOf(ms: number): string {
  const [value, unit] = ms < 120_000 ? [ms / 1000, 'second'] : ms < 2 * 3_600_000 ? [ms / 60_000, 'minute'] : [ms / 3_600_000, 'hour'];
  const rounded = Math.round(value);
  return `${rounded} ${unit}${rounded === 1 ? '' : 's'}`;
}

const outcomeStyles: Record<string, string> = {
  delivered: 'text-emerald-700 dark:text-emerald-400',
  retrying: 'text-amber-700 dark:text-amber-400',
  failed: 'text-red-700 dark:text-red-400',
  refused: 'text-red-700 dark:text-red-400',
};

export default async function NotificationsPage() {
  const user = await requireUser('/notifications');
  const env = getEnv();
  const targets = await listNotificationTargets(user.id);
  const email = targets.find((target) => target.channel === 'email');
  const pushes = targets.filter((target) => target.channel === 'push');
  const preferences = await getNotificationPreferences(user.id);
  const webhooks = await Promise.all(
    targets.filter((target) => target.channel === 'webhook').map(async (target) => ({ target, attempts: await listDeliveryAttempts(target.id, logLength) })),
  );
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold tracking-tight">Notifications</h1>
        <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
          Be told when a task asks you something or ends, wherever you are. Every event is kept until each place you chose has taken it, a restart
          included.
        </p>
      </div>
      <Card title="This browser">
        <PushControls
          vapidPublicKey={getVapidKeys().publicKey}
          subscriptions={pushes.map((target) => ({
            id: target.id,
            endpoint: target.address,
            browser: target.options.browser ?? 'A browser',
            events: target.events,
            createdAt: target.createdAt,
          }))}
        />
      </Card>
      <Card title="E-mail">
        {env.SMTP_URL ? (
          <>
            {!emailProven(user) && <ConfirmAddress address={user.email} paused={email !== undefined} />}
            {/* An address not yet proved shows the choices only while e-mail is on, to change or turn it off. */}
            {(emailProven(user) || email) && <EmailForm address={user.email} chosen={email?.events ?? []} includeDetails={email?.options.includeDetails === true} />}
          </>
        ) : (
          <p className="text-sm text-zinc-600 dark:text-zinc-400">E-mail is off on this server: its operator has not set SMTP_URL.</p>
        )}
      </Card>
      <Card title="Preferences">
        <PreferencesForm quietWhileLive={preferences?.quietWhileLive === 1} maxPerMinute={preferences?.maxPerMinute ?? env.NOTIFY_MAX_PER_MINUTE} most={maxPerMinuteChoice} />
      </Card>
      <Card title="Add a webhook">
        <p className="mb-4 text-sm text-zinc-600 dark:text-zinc-400">
          Events are POSTed as JSON and signed the Standard Webhooks way (<code className="font-mono">webhook-id</code>,{' '}
          <code className="font-mono">webhook-timestamp</code>, <code className="font-mono">webhook-signature</code>). A delivery that fails is
          retried with growing waits; after {spanOf(env.NOTIFY_RETRY_WINDOW_MS)} of failures the webhook is marked failing.
        </p>
        <AddWebhookForm />
      </Card>
      <Card title="Your webhooks">
        {webhooks.length === 0 ? (
          <p className="text-sm text-zinc-600 dark:text-zinc-400">No webhooks yet.</p>
        ) : (
          <ul className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {webhooks.map(({ target, attempts }) => (
              <li key={target.id} className="space-y-3 py-4 first:pt-0" data-webhook={target.address}>
                <div className="flex flex-wrap items-start justify-between gap-3">
                  <div className="min-w-0 space-y-1">
                    <p className="break-all font-mono text-sm">{target.address}</p>
                    <p className="text-xs text-zinc-600 dark:text-zinc-400">{target.events.join(', ')}</p>
                    {target.status === 'failing' ? (
                      <p role="alert" className="text-sm font-medium text-red-700 dark:text-red-400">
                        Failing since <RelativeTime at={target.failingSince ?? target.createdAt} />: {target.lastError}. Nothing is sent until you resume it;
                        events wait.
                      </p>
                    ) : target.attempts > 0 ? (
                      <p className="text-sm text-amber-700 dark:text-amber-400">
                        Retrying after {target.attempts} failed {target.attempts === 1 ? 'attempt' : 'attempts'}: {target.lastError}
                      </p>
                    ) : (
                      <p className="text-sm text-emerald-700 dark:text-emerald-400">Active</p>
                    )}
                  </div>
                  <WebhookButtons id={target.id} url={target.address} failing={target.status === 'failing'} />
                </div>
                {attempts.length > 0 && (
                  <div className="overflow-x-auto">
                    <table className="w-full text-left text-xs">
                      <caption className="sr-only">Last deliveries to {target.address}</caption>
                      <thead className="uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
                        <tr>
                          <th scope="col" className="py-1 pr-3 font-medium">When</th>
                          <th scope="col" className="py-1 pr-3 font-medium">Event</th>
                          <th scope="col" className="py-1 pr-3 font-medium">Attempt</th>
                          <th scope="col" className="py-1 pr-3 font-medium">Outcome</th>
                          <th scope="col" className="py-1 font-medium">Response</th>
                        </tr>
                      </thead>
                      <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                        {attempts.map((attempt) => (
                          <tr key={attempt.id}>
                            <td className="py-1 pr-3 whitespace-nowrap">
                              <RelativeTime at={attempt.at} />
                            </td>
                            <td className="py-1 pr-3 font-mono">{attempt.eventType}</td>
                            <td className="py-1 pr-3">{attempt.attempt}</td>
                            <td className={`py-1 pr-3 font-medium ${outcomeStyles[attempt.outcome]}`}>{attempt.outcome}</td>
                            <td className="max-w-md truncate py-1 font-mono" title={attempt.response ?? attempt.error ?? undefined}>
                              {attempt.statusCode ? `${attempt.statusCode} ` : ''}
                              {attempt.error ?? attempt.response ?? ''} <span className="text-zinc-500">({attempt.durationMs} ms)</span>
                            </td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </div>
                )}
              </li>
            ))}
          </ul>
        )}
      </Card>
    </div>
  );
}
