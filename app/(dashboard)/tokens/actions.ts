'use server';

import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { getCurrentUser } from '@/lib/auth/session';
import { issueAccessToken, revokeAccessToken } from '@/lib/auth/tokens';

export type CreateTokenState = { token?: string; name?: string; error?: string };

const expiryDays = z.enum(['never', '7', '30', '90', '365']);
const sessionExpired = 'Your session has expired. Sign in again to manage tokens.';

export async function createTokenAction(_previous: CreateTokenState, form: FormData): Promise<CreateTokenState> {
  const user = await getCurrentUser();
  if (!user) return { error: sessionExpired };
  const name = String(form.get('name') ?? '').trim();
  if (!name) return { error: 'Give the token a name, such as the client or machine that will use it.' };
  if (name.length > 100) return { error: 'Use a name of at most 100 characters.' };
  const expiry = expiryDays.safeParse(form.get('expires') ?? 'never');
  if (!expiry.success) return { error: 'Choose when the token expires.' };
  const expiresAt = expiry.data === 'never' ? null : Date.now() + Number(expiry.data) * 24 * 60 * 60 * 1000;
  const { token } = issueAccessToken({ userId: user.id, name, expiresAt });
  revalidatePath('/tokens');
  return { token, name };
}

export async function revokeTokenAction(tokenId: string): Promise<{ error?: string }> {
  const user = await getCurrentUser();
  if (!user) return { error: sessionExpired };
  if (!revokeAccessToken(tokenId, user.id)) return { error: 'This token is already revoked or does not exist.' };
  revalidatePath('/tokens');
  return {};
}
