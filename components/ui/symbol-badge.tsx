/** How a badge shows one state: a word, a symbol and colours. */
export interface BadgeStyle {
  label: string;
  icon: string;
  className: string;
}

/** A state in words and a symbol, never colour alone; `data` names it for tests and styles (data-status, data-state…). */
export function SymbolBadge({ style, data }: { style: BadgeStyle; data: Record<`data-${string}`, string> }) {
  return (
    <span {...data} className={`inline-flex items-center gap-1 whitespace-nowrap rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset ${style.className}`}>
      <span aria-hidden="true">{style.icon}</span>
      {style.label}
    </span>
  );
}
