'use server';

import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import type { User } from '@/db/queries/users';
import { upstreamStatusesFor } from '@/lib/upstreams';
import { removeUpstreamSecret, saveUpstreamSecret } from '@/lib/upstreams/credentials';
import { formActionArguments, validatedActionWithUser } from '@/lib/validated-action';

export type ServerSecretState = { saved?: boolean; removed?: boolean; error?: string };

const sessionExpired = 'Your session has expired. Sign in again to manage your servers.';
const unreadable = 'The form could not be read; reload the page.';
// The same words whether the server does not exist or is not this person's: names cannot be probed.
const noSuchServer = 'There is no server of that name for you that takes a secret of your own; reload the page to see your servers.';
const maxSecretLength = 4096;

/**
 * The secret goes into an HTTP header, which carries one line of visible ASCII: anything else would be
 * refused when the call is made, so it is refused here, where the person can still fix it.
 */
const secretSchema = z
  .string()
  // Spaces at either end do not survive in a header value; a pasted secret often carries them.
  .transform((secret) => secret.trim())
  .pipe(
    z
      .string()
      .min(1, 'Enter your secret first.')
      .max(maxSecretLength, `A secret is at most ${maxSecretLength} characters.`)
      .refine((secret) => !/[\r\n\u2028\u2029]/.test(secret), 'A secret must be one line: remove the line breaks.')
      .refine((secret) => /^[\x20-\x7e]*$/.test(secret), 'A secret may hold only letters, digits, spaces and the punctuation of a plain keyboard: an HTTP header carries nothing else.'),
  );

const serverName = z.string().min(1).max(200);

/** A server of the servers file this person may use and that takes each person's own secret, by name. */
function perUserServer(user: User, name: string) {
  return upstreamStatusesFor(user.email).find((server) => server.name === name && server.perUserHeader !== null);
}

/** Saves (or replaces) the person's own secret for a server; it is never sent back, not even here. */
export const saveServerSecretAction = validatedActionWithUser(
  formActionArguments,
  { signedOut: { error: sessionExpired } as ServerSecretState, invalid: { error: unreadable } as ServerSecretState, storage: (sentence) => ({ error: sentence }) },
  async (user, _previous, form): Promise<ServerSecretState> => {
    const name = serverName.safeParse(form.get('server'));
    if (!name.success || !perUserServer(user, name.data)) return { error: noSuchServer };
    const secret = secretSchema.safeParse(typeof form.get('secret') === 'string' ? form.get('secret') : '');
    if (!secret.success) return { error: secret.error.issues[0].message };
    await saveUpstreamSecret(user.id, name.data, secret.data);
    revalidatePath('/servers');
    return { saved: true };
  },
);

export const removeServerSecretAction = validatedActionWithUser(
  z.tuple([serverName]),
  { signedOut: { error: sessionExpired } as ServerSecretState, invalid: { error: noSuchServer } as ServerSecretState, storage: (sentence) => ({ error: sentence }) },
  async (user, name): Promise<ServerSecretState> => {
    if (!perUserServer(user, name)) return { error: noSuchServer };
    if (!(await removeUpstreamSecret(user.id, name))) return { error: 'You have no secret saved for this server.' };
    revalidatePath('/servers');
    return { removed: true };
  },
);
