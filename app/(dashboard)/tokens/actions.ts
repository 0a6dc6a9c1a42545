'use server';

import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { issueAccessToken, revokeAccessToken } from '@/lib/auth/tokens';
import { closeStreamsOfRevokedTokens } from '@/lib/mcp/http/token-streams';
import { formActionArguments, validatedActionWithUser } from '@/lib/validated-action';

export type CreateTokenState = { token?: string; name?: string; error?: string };

const expiryDays = z.enum(['never', '7', '30', '90', '365']);
const sessionExpired = 'Your session has expired. Sign in again to manage tokens.';

export const createTokenAction = validatedActionWithUser(
  formActionArguments,
  { signedOut: { error: sessionExpired } as CreateTokenState, invalid: { error: 'The form could not be read; reload the page.' } as CreateTokenState, storage: (sentence) => ({ error: sentence }) },
  async (user, _previous, form): Promise<CreateTokenState> => {
    const name = String(form.get('name') ?? '').trim();
    if (!name) return { error: 'Give the token a name, such as the client or machine that will use it.' };
    if (name.length > 100) return { error: 'Use a name of at most 100 characters.' };
    const expiry = expiryDays.safeParse(form.get('expires') ?? 'never');
    if (!expiry.success) return { error: 'Choose when the token expires.' };
    const expiresAt = expiry.data === 'never' ? null : Date.now() + Number(expiry.data) * 24 * 60 * 60 * 1000;
    const { token } = await issueAccessToken({ userId: user.id, name, expiresAt });
    revalidatePath('/tokens');
    return { token, name };
  },
);

const notRevocable = 'This token is already revoked or does not exist.';

export const revokeTokenAction = validatedActionWithUser(
  z.tuple([z.string().max(100)]),
  { signedOut: { error: sessionExpired } as { error?: string }, invalid: { error: notRevocable } as { error?: string }, storage: (sentence) => ({ error: sentence }) },
  async (user, tokenId): Promise<{ error?: string }> => {
    if (!(await revokeAccessToken(tokenId, user.id))) return { error: notRevocable };
    await closeStreamsOfRevokedTokens();
    revalidatePath('/tokens');
    return {};
  },
);
