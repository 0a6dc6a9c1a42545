/** Progress as a bar with its numbers; an indeterminate stripe when the total is unknown. */
export function ProgressBar({ progress, total, label }: { progress: number | null; total: number | null; label: string }) {
  if (progress === null) return <span className="text-xs text-zinc-500 dark:text-zinc-400">—</span>;
  const percent = total ? Math.min(100, Math.max(0, (progress / total) * 100)) : null;
  const text = total ? `${formatNumber(progress)} / ${formatNumber(total)}` : formatNumber(progress);
  return (
    <div className="flex min-w-28 items-center gap-2">
      <div
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={total ?? undefined}
        aria-valuenow={total ? progress : undefined}
        aria-valuetext={text}
        className="h-2 w-full overflow-hidden rounded-full bg-zinc-200 dark:bg-zinc-800"
      >
        <div
          className={`h-full rounded-full bg-blue-600 transition-[width] duration-300 dark:bg-blue-400 ${percent === null ? 'w-1/3 animate-pulse' : ''}`}
          style={percent === null ? undefined : { width: `${percent}%` }}
        />
      </div>
      <span className="whitespace-nowrap text-xs tabular-nums text-zinc-600 dark:text-zinc-400">{percent === null ? text : `${Math.round(percent)}%`}</span>
    </div>
  );
}

function formatNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}
