import { forgetBrowserAction } from '@/app/(dashboard)/notifications/actions';

/**
 * Signing out of this browser ends its push subscription too: on a shared computer the next person must
 * not be shown this person's questions. The server forgets it first, while the session still lets it,
 * then the browser unsubscribes, so that its push service refuses anything still sent to it. Signing
 * out goes on whatever happens here.
 */
export async function forgetThisBrowser(): Promise<void> {
  try {
    if (!('serviceWorker' in navigator)) return;
    const registration = await navigator.serviceWorker.getRegistration('/');
    const subscription = await registration?.pushManager?.getSubscription();
    if (!subscription) return;
    await forgetBrowserAction(subscription.endpoint).catch((error: unknown) => console.error('The server could not forget this browser; it unsubscribes all the same', error));
    await subscription.unsubscribe();
  } catch (error) {
    console.error('This browser could not unsubscribe from push notifications', error);
  }
}
