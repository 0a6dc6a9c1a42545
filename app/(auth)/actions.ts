'use server';

import { revalidatePath } from 'next/cache';
import { headers } from 'next/headers';
import { z } from 'zod';
import { clearUserReclaimed } from '@/db/queries/users';
import { endAllSessions, registerUser } from '@/lib/auth/accounts';
import { clientAddress } from '@/lib/auth/client-address';
import { throttleSignUp } from '@/lib/auth/throttle';
import { tooManyAttemptsMessage } from '@/lib/auth/throttle-message';
import { getEnv } from '@/lib/env';
import { closeStreamsOfRevokedTokens } from '@/lib/mcp/http/token-streams';
import { validatedActionWithUser } from '@/lib/validated-action';

export type SignUpState = { ok: boolean; errors: Partial<Record<'email' | 'password' | 'name' | 'form', string>> };

export async function signUpAction(_previous: SignUpState, form: FormData): Promise<SignUpState> {
  if (!getEnv().allowSignup) return { ok: false, errors: { form: 'Sign-up is closed on this server. Ask its operator for an account.' } };
  const email = form.get('email');
  const verdict = await throttleSignUp({ address: clientAddress(await headers()), email: typeof email === 'string' ? email : '' });
  if (!verdict.allowed) return { ok: false, errors: { form: tooManyAttemptsMessage(verdict.retryAfterSeconds) } };
  const result = await registerUser({ email, password: form.get('password'), name: form.get('name') });
  if (!result.ok) return { ok: false, errors: { [result.field]: result.message } };
  return { ok: true, errors: {} };
}

/**
 * Ends every session of the signed-in person, this one included (the button signs this browser out
 * next), with the browsers subscribed in them, and, when they ask, their personal access tokens and
 * connected apps, and their webhooks and e-mail notifications too.
 */
export const signOutEverywhereAction = validatedActionWithUser(
  z.tuple([z.object({ alsoTokensAndApps: z.boolean(), alsoNotifications: z.boolean().default(false) })]),
  { signedOut: { ok: false }, invalid: { ok: false } },
  async (user, choice): Promise<{ ok: boolean }> => {
    await endAllSessions(user.id, choice);
    if (choice.alsoTokensAndApps) await closeStreamsOfRevokedTokens();
    return { ok: true };
  },
);

/** The person has read what taking their account back removed: the notice goes. */
export const dismissReclaimedNoticeAction = validatedActionWithUser(z.tuple([]), { signedOut: { ok: false }, invalid: { ok: false } }, async (user): Promise<{ ok: boolean }> => {
  await clearUserReclaimed(user.id);
  revalidatePath('/', 'layout');
  return { ok: true };
});
