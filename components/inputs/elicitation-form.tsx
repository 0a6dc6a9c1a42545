'use client';

import { useActionState } from 'react';
import { answerQuestionAction, type AnswerState } from '@/app/(dashboard)/tasks/[taskId]/input-actions';
import { Button } from '@/components/ui/button';
import { inputClass } from '@/components/ui/field';
import type { ElicitationField } from '@/lib/tasks/elicitation';

const htmlType = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' } as const;

function FieldInput({ field, error, value }: { field: ElicitationField; error?: string; value?: string | string[] | boolean }) {
  const id = `answer-${field.name}`;
  const describedBy = [field.description ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(' ') || undefined;
  const common = { id, name: field.name, 'aria-invalid': error ? true : undefined, 'aria-describedby': describedBy, 'aria-required': field.required };
  const label = (
    <>
      {field.title}
      {field.required && <span className="text-red-700 dark:text-red-400"> *</span>}
    </>
  );
  const hint = field.description && (
    <p id={`${id}-hint`} className="text-xs text-zinc-500 dark:text-zinc-400">
      {field.description}
    </p>
  );
  const problem = error && (
    <p id={`${id}-error`} role="alert" className="text-sm text-red-700 dark:text-red-400">
      {field.title} {error}
    </p>
  );

  if (field.kind === 'boolean') {
    return (
      <div className="space-y-1">
        <label htmlFor={id} className="flex items-center gap-2 text-sm font-medium">
          <input type="checkbox" defaultChecked={typeof value === 'boolean' ? value : (field.default ?? false)} className="h-4 w-4" {...common} />
          {label}
        </label>
        {hint}
        {problem}
      </div>
    );
  }
  if (field.kind === 'multiselect') {
    return (
      <fieldset className="space-y-1" aria-describedby={describedBy}>
        <legend className="text-sm font-medium">{label}</legend>
        {hint}
        <div className="flex flex-wrap gap-x-4 gap-y-1">
          {field.options.map((option) => (
            <label key={option.value} className="flex items-center gap-2 text-sm">
              <input
                type="checkbox"
                name={field.name}
                value={option.value}
                defaultChecked={(Array.isArray(value) ? value : field.default)?.includes(option.value)}
                className="h-4 w-4"
              />
              {option.label}
            </label>
          ))}
        </div>
        {problem}
      </fieldset>
    );
  }
  const typed = typeof value === 'string' ? value : undefined;
  let control;
  if (field.kind === 'select') {
    control = (
      <select defaultValue={typed ?? field.default ?? ''} className={inputClass} {...common}>
        <option value="">Choose…</option>
        {field.options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
    );
  } else if (field.kind === 'number' || field.kind === 'integer') {
    control = (
      <input type="number" inputMode={field.kind === 'integer' ? 'numeric' : 'decimal'} step={field.kind === 'integer' ? 1 : 'any'} min={field.minimum} max={field.maximum} defaultValue={typed ?? field.default} className={inputClass} {...common} />
    );
  } else if (field.kind === 'string') {
    const type = field.format ? htmlType[field.format] : 'text';
    const initial = typed ?? (field.format === 'date-time' && field.default ? field.default.slice(0, 16) : field.default);
    control = <input type={type} minLength={field.minLength} maxLength={field.maxLength} defaultValue={initial} className={inputClass} {...common} />;
  }
  return (
    <div className="space-y-1">
      <label htmlFor={id} className="block text-sm font-medium">
        {label}
      </label>
      {control}
      {hint}
      {problem}
    </div>
  );
}

/** Choices few enough to be buttons: a yes/no question (or a pick among up to four) answered in one tap. */
const oneTapChoices = 4;

function oneTapAnswers(fields: ElicitationField[]): Array<{ label: string; value: string }> | null {
  if (fields.length !== 1) return null;
  const [field] = fields;
  // A checkbox posts "on" when ticked and nothing when not: the two buttons post just that.
  if (field.kind === 'boolean') return [{ label: 'Yes', value: 'on' }, { label: 'No', value: '' }];
  if (field.kind === 'select' && field.options.length <= oneTapChoices) return field.options.map((option) => ({ label: option.label, value: option.value }));
  return null;
}

/**
 * A form generated from an elicitation's requestedSchema, with Submit, Decline and Cancel; a question
 * with a handful of choices gets one button each instead, so that it is answered in one tap.
 */
export function ElicitationForm({ inputId, message, fields }: { inputId: string; message: string; fields: ElicitationField[] }) {
  const [state, action, pending] = useActionState<AnswerState, FormData>(answerQuestionAction.bind(null, inputId), { ok: false });
  const taps = oneTapAnswers(fields);
  return (
    <form action={action} noValidate className="space-y-4" aria-label={`Answer: ${message}`}>
      <p className="whitespace-pre-wrap text-sm font-medium">{message}</p>
      {taps ? (
        <div className="grid grid-cols-2 gap-2 sm:flex sm:flex-wrap" role="group" aria-label={fields[0].title}>
          {taps.map((tap) => (
            <Button key={tap.value} type="submit" name={fields[0].name} value={tap.value} disabled={pending} className="min-h-11 sm:min-w-24">
              {tap.label}
            </Button>
          ))}
        </div>
      ) : (
        fields.map((field) => <FieldInput key={field.name} field={field} error={state.fieldErrors?.[field.name]} value={state.values?.[field.name]} />)
      )}
      {state.message && (taps || Object.keys(state.fieldErrors ?? {}).length === 0) && (
        <p role="alert" className="text-sm text-red-700 dark:text-red-400">
          {state.message}
        </p>
      )}
      <div className="flex flex-wrap gap-2">
        {!taps && (
          <Button type="submit" name="$action" value="accept" disabled={pending}>
            Submit
          </Button>
        )}
        <Button type="submit" name="$action" value="decline" variant="secondary" disabled={pending}>
          Decline
        </Button>
        <Button type="submit" name="$action" value="cancel" variant="ghost" disabled={pending}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
