'use server';

import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { contentFromForm, describeFields } from '@/lib/tasks/elicitation';
import { storageTroubleIn, storageTroubleSentence } from '@/lib/storage/trouble';
import { validatedActionWithUser } from '@/lib/validated-action';

/** The name of the form's button field; schemas may not use names starting with "$". */
const actionField = '$action';

export type AnswerState = {
  ok: boolean;
  message?: string;
  fieldErrors?: Record<string, string>;
  /** What was typed, so that a refused answer does not wipe the form. */
  values?: Record<string, string | string[] | boolean>;
};

/** Answers a task's question from the dashboard: validated against its schema, first answer wins. */
export const answerQuestionAction = validatedActionWithUser(
  z.tuple([z.string().max(100), z.unknown(), z.instanceof(FormData)]),
  {
    signedOut: { ok: false, message: 'Your session has expired. Sign in again to answer.' } as AnswerState,
    invalid: { ok: false, message: 'This question no longer exists.' } as AnswerState,
    storage: (sentence) => ({ ok: false, message: sentence }),
  },
  async (user, inputId, _previous, form): Promise<AnswerState> => {
    const { engine } = getRuntime();
    const input = await engine.inputs.get(inputId);
    if (!input || input.userId !== user.id || input.kind !== 'elicitation') return { ok: false, message: 'This question no longer exists.' };
    const fields = describeFields(input.request.requestedSchema);
    if (!fields.ok) return { ok: false, message: `This question cannot be answered here: ${fields.message}` };
    const intent = String(form.get(actionField) ?? 'accept');
    const action = intent === 'decline' || intent === 'cancel' ? intent : 'accept';
    const response = action === 'accept' ? { action, content: contentFromForm(fields.fields, form) } : { action };
    const typed = () =>
      Object.fromEntries(
        fields.fields.map((field) => [
          field.name,
          field.kind === 'multiselect' ? form.getAll(field.name).map(String) : field.kind === 'boolean' ? form.get(field.name) === 'on' : String(form.get(field.name) ?? ''),
        ]),
      );
    let outcome;
    try {
      outcome = await engine.inputs.answer(inputId, user.id, response, 'dashboard', user.email);
    } catch (error) {
      // Storage could not take the answer: the person is told why, and keeps what they typed.
      const trouble = storageTroubleIn(error);
      if (!trouble) throw error;
      return { ok: false, message: storageTroubleSentence(trouble), values: typed() };
    }
    revalidatePath(`/tasks/${input.taskId}`);
    if (outcome.ok) return { ok: true };
    return { ok: false, message: outcome.message, fieldErrors: outcome.fieldErrors, values: typed() };
  },
);

export type DecideState = { ok: boolean; message?: string };

const decisionSchema = z.enum(['approve', 'deny']);

/**
 * Approves or denies a call that waits for a person: the only way an approval is answered (no MCP
 * client can). The button pressed names the decision; the first answer wins, and who gave it is kept.
 */
export const decideApprovalAction = validatedActionWithUser(
  z.tuple([z.string().max(100), z.unknown(), z.instanceof(FormData)]),
  {
    signedOut: { ok: false, message: 'Your session has expired. Sign in again to approve or deny.' } as DecideState,
    invalid: { ok: false, message: 'This approval no longer exists.' } as DecideState,
    storage: (sentence) => ({ ok: false, message: sentence }),
  },
  async (user, inputId, _previous, form): Promise<DecideState> => {
    const decision = decisionSchema.safeParse(form.get('decision'));
    if (!decision.success) return { ok: false, message: 'Press Approve or Deny.' };
    const outcome = await getRuntime().engine.inputs.decide(inputId, user.id, decision.data, user.email);
    if (!outcome.ok && outcome.reason === 'not_found') return { ok: false, message: 'This approval no longer exists.' };
    if (outcome.input) revalidatePath(`/tasks/${outcome.input.taskId}`);
    revalidatePath('/inbox');
    return outcome.ok ? { ok: true } : { ok: false, message: outcome.message };
  },
);
