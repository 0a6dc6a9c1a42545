'use server';

import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { isTaskError } from '@/lib/tasks/engine';
import { validatedActionWithUser } from '@/lib/validated-action';

export type CancelState = { ok: boolean; message?: string };

/** Cancels through the same engine call as tasks/cancel: the work is aborted and the client sees cancelled. */
export const cancelTaskAction = validatedActionWithUser(
  z.tuple([z.string().max(100)]),
  {
    signedOut: { ok: false, message: 'Your session has expired. Sign in again to cancel this task.' } as CancelState,
    invalid: { ok: false, message: 'This task no longer exists.' } as CancelState,
    storage: (sentence) => ({ ok: false, message: sentence }),
  },
  async (user, taskId): Promise<CancelState> => {
    try {
      await getRuntime().engine.cancelTask(taskId, user.id, 'dashboard');
    } catch (error) {
      if (!isTaskError(error)) throw error;
      const message =
        error.reason === 'terminal' ? `This task has already ended (${error.status}); there is nothing to cancel.` : 'This task no longer exists.';
      return { ok: false, message };
    }
    revalidatePath(`/tasks/${taskId}`);
    return { ok: true };
  },
);
