import { CopyButton } from './copy-button';

/** A copy-ready snippet with a label that names it for the copy button too. */
export function CodeBlock({ label, code }: { label: string; code: string }) {
  return (
    <div className="space-y-1">
      <div className="flex items-center justify-between gap-2">
        <p className="text-sm font-medium">{label}</p>
        <CopyButton text={code} label={`Copy ${label}`} />
      </div>
      {/* Focusable, so that a snippet wider than a phone can be scrolled by keyboard. */}
      <pre tabIndex={0} role="region" aria-label={label} className="overflow-x-auto rounded-md bg-zinc-950 p-3 font-mono text-xs leading-relaxed text-zinc-100">{code}</pre>
    </div>
  );
}
