'use server';

import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { deleteNotificationTarget, getNotificationTarget, resumeNotificationTarget, setNotificationPreferences } from '@/db/queries/notifications';
import { notificationEventTypes } from '@/db/schema';
import { getEnv } from '@/lib/env';
import { sendConfirmationLink } from '@/lib/notify/email-proof';
import { addWebhook, forgetBrowser, maxPerMinuteChoice, pushSubscriptionSchema, setEmailPreferences, subscribeBrowser } from '@/lib/notify/targets';
import { getRuntime } from '@/lib/runtime';
import { formActionArguments, validatedActionWithUser } from '@/lib/validated-action';

const sessionExpired = 'Your session has expired. Sign in again to change notifications.';
const unreadable = 'The form could not be read; reload the page.';

/** The event types ticked in a form; anything else posted is refused. */
function chosenEvents(form: FormData) {
  return z.array(z.enum(notificationEventTypes)).safeParse(form.getAll('events'));
}

export type SaveEmailState = { saved?: boolean; error?: string };

export const saveEmailAction = validatedActionWithUser(
  formActionArguments,
  { signedOut: { error: sessionExpired } as SaveEmailState, invalid: { error: unreadable } as SaveEmailState, storage: (sentence) => ({ error: sentence }) },
  async (user, _previous, form): Promise<SaveEmailState> => {
    if (!getEnv().SMTP_URL) return { error: 'E-mail is off on this server: its operator has not set SMTP_URL.' };
    const events = chosenEvents(form);
    if (!events.success) return { error: unreadable };
    const saved = await setEmailPreferences(user, events.data, form.get('includeDetails') === 'on');
    if ('error' in saved) return saved;
    getRuntime().notifier.targetsChanged();
    revalidatePath('/notifications');
    return { saved: true };
  },
);

export type SendConfirmationState = { sent?: string; error?: string };

/** Mails a link that proves the account's address: e-mail notifications go only to a proved one. */
export const sendConfirmationLinkAction = validatedActionWithUser(
  formActionArguments,
  { signedOut: { error: sessionExpired } as SendConfirmationState, invalid: { error: unreadable } as SendConfirmationState, storage: (sentence) => ({ error: sentence }) },
  async (user): Promise<SendConfirmationState> => {
    const mail = getRuntime().mail;
    if (!mail) return { error: 'E-mail is off on this server: its operator has not set SMTP_URL.' };
    const sent = await sendConfirmationLink(user, mail, getEnv().APP_URL);
    if ('error' in sent) return sent;
    return { sent: user.email };
  },
);

export type AddWebhookState = { secret?: string; url?: string; error?: string };

export const addWebhookAction = validatedActionWithUser(
  formActionArguments,
  { signedOut: { error: sessionExpired } as AddWebhookState, invalid: { error: unreadable } as AddWebhookState, storage: (sentence) => ({ error: sentence }) },
  async (user, _previous, form): Promise<AddWebhookState> => {
    const events = chosenEvents(form);
    if (!events.success) return { error: unreadable };
    const added = await addWebhook(user.id, { url: String(form.get('url') ?? ''), events: events.data }, getEnv().notifyPrivateHosts);
    if ('error' in added) return { error: added.error };
    getRuntime().notifier.targetsChanged();
    revalidatePath('/notifications');
    return { secret: added.target.secret!, url: added.target.address };
  },
);

const notFound = 'This webhook does not exist any more.';
const webhookId = z.tuple([z.string().max(100)]);

const alreadyRemoved = 'This is already removed.';

/** Removes one of the person's webhooks or subscribed browsers. */
export const removeTargetAction = validatedActionWithUser(
  webhookId,
  { signedOut: { error: sessionExpired } as { error?: string }, invalid: { error: alreadyRemoved } as { error?: string }, storage: (sentence) => ({ error: sentence }) },
  async (user, id): Promise<{ error?: string }> => {
    if (!(await deleteNotificationTarget(id, user.id))) return { error: alreadyRemoved };
    revalidatePath('/notifications');
    return {};
  },
);

export const resumeWebhookAction = validatedActionWithUser(
  webhookId,
  { signedOut: { error: sessionExpired } as { error?: string }, invalid: { error: notFound } as { error?: string }, storage: (sentence) => ({ error: sentence }) },
  async (user, id): Promise<{ error?: string }> => {
    if (!(await resumeNotificationTarget(id, user.id))) return { error: 'This webhook is not failing, or does not exist any more.' };
    getRuntime().notifier.wake();
    revalidatePath('/notifications');
    return {};
  },
);

export const testWebhookAction = validatedActionWithUser(
  webhookId,
  { signedOut: { error: sessionExpired } as { error?: string; result?: string }, invalid: { error: notFound } as { error?: string; result?: string }, storage: (sentence) => ({ error: sentence }) },
  async (user, id): Promise<{ error?: string; result?: string }> => {
    const target = await getNotificationTarget(id, user.id);
    if (!target || target.channel !== 'webhook') return { error: notFound };
    const sent = await getRuntime().notifier.sendTestEvent(target);
    if ('limited' in sent) return { error: `At most ${sent.perMinute} test events a minute to one webhook: wait a little, then try again.` };
    revalidatePath('/notifications');
    return sent.ok ? { result: `Delivered: ${sent.detail}` } : { error: `Not delivered: ${sent.detail}` };
  },
);

export type SubscribeBrowserResult = { id?: string; error?: string };

/** Keeps this browser's push subscription, with the events it is told of. */
export const subscribeBrowserAction = validatedActionWithUser(
  z.tuple([pushSubscriptionSchema, z.array(z.enum(notificationEventTypes)).max(notificationEventTypes.length), z.string().max(500)]),
  { signedOut: { error: sessionExpired } as SubscribeBrowserResult, invalid: { error: 'The browser gave a subscription this server cannot use.' } as SubscribeBrowserResult, storage: (sentence) => ({ error: sentence }) },
  async (user, subscription, events, browser): Promise<SubscribeBrowserResult> => {
    const subscribed = await subscribeBrowser(user, subscription, events, browser, getEnv().notifyPrivateHosts);
    if ('error' in subscribed) return { error: subscribed.error };
    getRuntime().notifier.targetsChanged();
    revalidatePath('/notifications');
    return { id: subscribed.target.id };
  },
);

/**
 * Signing out of this browser: its subscription goes with the session, so that the next person to use
 * the browser is not shown this person's questions. Known by its push endpoint, as the browser gives it.
 */
export const forgetBrowserAction = validatedActionWithUser(
  z.tuple([z.string().max(2000)]),
  { signedOut: {} as { removed?: boolean }, invalid: {} as { removed?: boolean } },
  async (user, endpoint): Promise<{ removed?: boolean }> => ({ removed: await forgetBrowser(user.id, endpoint) }),
);

export type SavePreferencesState = { saved?: boolean; error?: string };

export const savePreferencesAction = validatedActionWithUser(
  formActionArguments,
  { signedOut: { error: sessionExpired } as SavePreferencesState, invalid: { error: unreadable } as SavePreferencesState, storage: (sentence) => ({ error: sentence }) },
  async (user, _previous, form): Promise<SavePreferencesState> => {
    const perMinute = z.coerce.number().int().min(1).max(maxPerMinuteChoice).safeParse(form.get('maxPerMinute'));
    if (!perMinute.success) return { error: `Choose a whole number of messages a minute, from 1 to ${maxPerMinuteChoice}.` };
    await setNotificationPreferences({ userId: user.id, quietWhileLive: form.get('quietWhileLive') === 'on' ? 1 : 0, maxPerMinute: perMinute.data });
    revalidatePath('/notifications');
    return { saved: true };
  },
);
