import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { z } from 'zod';
import {
  createNotificationTarget,
  deleteNotificationTarget,
  deletePushTargetByAddress,
  deletePushTargetsByAddress,
  listNotificationTargets,
  updateNotificationTarget,
  type NotificationTargetRow,
} from '@/db/queries/notifications';
import type { User } from '@/db/queries/users';
import { notificationEventTypes, type NotificationEventType } from '@/db/schema';
import type { PrivateHost } from '@/lib/env';
import { allowsPrivate, bareHost, isPublicAddress } from './outbound';

/** The most messages a minute a person may ask for, per browser and e-mail. */
export const maxPerMinuteChoice = 60;

/** A person (or the operator, for every user) may have this many webhooks. */
const maxWebhooksPerOwner = 10;

const eventTypesSchema = z.array(z.enum(notificationEventTypes)).min(1, 'Choose at least one event.').max(notificationEventTypes.length);

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * A webhook URL people may give: https (http only for a host and port the operator allows), no credentials in
 * it, and not an address this server must not reach. Names that resolve to such an address are refused
 * at delivery, where the address is known.
 */
function checkWebhookUrl(raw: string, privateHosts: readonly PrivateHost[]): { url: string } | { error: string } {
  const text = raw.trim();
  if (text.length === 0) return { error: 'Give the URL the events are sent to.' };
  if (text.length > 2000) return { error: 'Use a URL of at most 2000 characters.' };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { error: 'That is not a URL: give one like https://example.com/hooks/tasks.' };
  }
  const host = bareHost(url.hostname);
  const allowed = allowsPrivate(privateHosts, url);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowed)) return { error: 'Use an https:// URL: events name your tasks and their questions.' };
  if (url.username || url.password) return { error: 'Put no user name or password in the URL: every delivery is signed with the endpoint’s secret instead.' };
  if (!allowed && (host === 'localhost' || host.endsWith('.localhost') || (net.isIP(host) && !isPublicAddress(host)))) {
    return { error: `${url.hostname} is a private, loopback or link-local address: events go only to public addresses.` };
  }
  return { url: url.toString() };
}

export async function addWebhook(
  userId: string | null,
  input: { url: string; events: NotificationEventType[] },
  privateHosts: readonly PrivateHost[],
): Promise<{ target: NotificationTargetRow } | { error: string }> {
  const checked = checkWebhookUrl(input.url, privateHosts);
  if ('error' in checked) return checked;
  const events = eventTypesSchema.safeParse(input.events);
  if (!events.success) return { error: events.error.issues[0].message };
  const existing = (await listNotificationTargets(userId)).filter((target) => target.channel === 'webhook');
  if (existing.length >= maxWebhooksPerOwner) return { error: `You have ${existing.length} webhooks, the most allowed: remove one first.` };
  const target = await createNotificationTarget({ userId, channel: 'webhook', address: checked.url, secret: newWebhookSecret(), events: events.data, options: {} });
  return { target };
}

/** Whether e-mail may go to the account's address: someone proved it is theirs (a link, or GitHub or Google). */
export function emailProven(user: Pick<User, 'email' | 'verifiedEmail'>): boolean {
  return user.verifiedEmail === user.email;
}

/**
 * Turns a person's e-mail on with these events (or changes them); no events turns it off, forgetting its
 * place. Only a proved address may be turned on: the messages carry what tools wrote, under this
 * server's name, and sign-up never checked whose address it was. Turning off always works.
 */
export async function setEmailPreferences(
  user: Pick<User, 'id' | 'email' | 'verifiedEmail'>,
  events: NotificationEventType[],
  includeDetails: boolean,
): Promise<{ ok: true } | { error: string }> {
  const current = (await listNotificationTargets(user.id)).find((target) => target.channel === 'email');
  if (current && events.length === 0) await deleteNotificationTarget(current.id, user.id);
  else if (events.length > 0 && !emailProven(user)) return { error: `Confirm ${user.email} first: send yourself the confirmation link, and open it.` };
  else if (current) await updateNotificationTarget(current.id, user.id, { events, options: { includeDetails } });
  else if (events.length > 0)
    await createNotificationTarget({ userId: user.id, channel: 'email', address: user.email, secret: null, events, options: { includeDetails } });
  return { ok: true };
}

/** A person may have this many browsers subscribed. */
const maxPushSubscriptionsPerUser = 10;

/** What a browser's PushSubscription.toJSON() gives: the push service's endpoint and the keys to encrypt for it. */
export const pushSubscriptionSchema = z.object({
  endpoint: z.string().max(2000),
  keys: z.object({
    // An uncompressed P-256 point (65 bytes) and a 16-byte secret, base64url (RFC 8291).
    p256dh: z.string().regex(/^[A-Za-z0-9_-]{86,88}={0,2}$/, 'not a P-256 public key'),
    auth: z.string().regex(/^[A-Za-z0-9_-]{22,24}={0,2}$/, 'not a 16-byte secret'),
  }),
});

/**
 * Subscribes one browser (or changes what it is told of: one subscription per browser, known by its
 * endpoint). The endpoint is held to the webhooks' rule: https, and not a private address. The
 * subscription belongs to the session it is made in: it ends when the person's sessions end, and a
 * browser another person subscribed before is theirs no more (one browser tells one person).
 */
export async function subscribeBrowser(
  user: Pick<User, 'id' | 'sessionGeneration'>,
  subscription: z.infer<typeof pushSubscriptionSchema>,
  events: NotificationEventType[],
  browser: string,
  privateHosts: readonly PrivateHost[],
): Promise<{ target: NotificationTargetRow } | { error: string }> {
  const checked = checkWebhookUrl(subscription.endpoint, privateHosts);
  if ('error' in checked) return { error: `The browser's push service cannot be used: ${checked.error}` };
  const chosen = eventTypesSchema.safeParse(events);
  if (!chosen.success) return { error: chosen.error.issues[0].message };
  const keys = JSON.stringify({ p256dh: subscription.keys.p256dh, auth: subscription.keys.auth });
  const mine = (await listNotificationTargets(user.id)).filter((target) => target.channel === 'push');
  const same = mine.some((target) => target.address === checked.url);
  if (!same && mine.length >= maxPushSubscriptionsPerUser) {
    return { error: `You have ${mine.length} browsers subscribed, the most allowed: remove one first.` };
  }
  await deletePushTargetsByAddress(checked.url);
  const target = await createNotificationTarget({
    userId: user.id,
    channel: 'push',
    address: checked.url,
    secret: keys,
    events: chosen.data,
    options: { browser: browser.slice(0, 100) },
    sessionGeneration: user.sessionGeneration,
  });
  return { target };
}

/** Removes the person's subscription of the browser whose push endpoint this is; false when there was none. */
export async function forgetBrowser(userId: string, endpoint: string): Promise<boolean> {
  let address: string;
  try {
    // Stored as the URL parser wrote it when the browser subscribed.
    address = new URL(endpoint).toString();
  } catch {
    return false;
  }
  return deletePushTargetByAddress(userId, address);
}
