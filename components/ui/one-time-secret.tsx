import { CopyButton } from './copy-button';
import { inputClass } from './field';

/** A secret shown once, right after it was made: its note, a read-only field that selects itself, a copy button. */
export function OneTimeSecret({ note, id, label, value, copyLabel }: { note: string; id: string; label: string; value: string; copyLabel: string }) {
  return (
    <div className="rounded-md border border-emerald-200 bg-emerald-50 p-4 dark:border-emerald-900 dark:bg-emerald-950" role="status">
      <p className="mb-2 text-sm font-medium text-emerald-900 dark:text-emerald-200">{note}</p>
      <label htmlFor={id} className="mb-1 block text-sm font-medium">
        {label}
      </label>
      <div className="flex gap-2">
        <input id={id} readOnly value={value} className={`${inputClass} font-mono`} onFocus={(event) => event.currentTarget.select()} />
        <CopyButton text={value} label={copyLabel} />
      </div>
    </div>
  );
}
