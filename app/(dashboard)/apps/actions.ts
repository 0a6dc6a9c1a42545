'use server';

import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { disconnectApp } from '@/lib/auth/oauth/consent';
import { getCurrentUser } from '@/lib/auth/session';
import { closeStreamsOfRevokedTokens } from '@/lib/mcp/http/token-streams';

export async function disconnectAppAction(consentId: string): Promise<{ error?: string }> {
  const user = await getCurrentUser();
  if (!user) return { error: 'Your session has expired. Sign in again to manage connected apps.' };
  const id = z.uuid().safeParse(consentId);
  if (!id.success || !(await disconnectApp(id.data, user.id))) return { error: 'This application is already disconnected.' };
  await closeStreamsOfRevokedTokens();
  revalidatePath('/apps');
  return {};
}
