'use server';

import { revalidatePath } from 'next/cache';
import { getCurrentUser } from '@/lib/auth/session';
import { getRuntime } from '@/lib/runtime';
import { isTaskError } from '@/lib/tasks/engine';

export type CancelState = { ok: boolean; message?: string };

/** Cancels through the same engine call as tasks/cancel: the work is aborted and the client sees cancelled. */
export async function cancelTaskAction(taskId: string): Promise<CancelState> {
  const user = await getCurrentUser();
  if (!user) return { ok: false, message: 'Your session has expired. Sign in again to cancel this task.' };
  try {
    getRuntime().engine.cancelTask(taskId, user.id, 'dashboard');
  } catch (error) {
    if (!isTaskError(error)) throw error;
    const message =
      error.reason === 'terminal' ? `This task has already ended (${error.status}); there is nothing to cancel.` : 'This task no longer exists.';
    return { ok: false, message };
  }
  revalidatePath(`/tasks/${taskId}`);
  return { ok: true };
}
