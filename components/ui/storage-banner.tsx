import type { StorageReport } from '@/lib/storage/health';
import { storageTroubleState } from '@/lib/storage/trouble';

/** Says, above every dashboard page, that storage is in trouble or running low: what still works, and what does not. */
export function StorageBanner({ report }: { report: StorageReport }) {
  if (report.writable && !report.lowSpace) return null;
  const text = report.trouble
    ? `${storageTroubleState(report.trouble)} New tasks, answers and changes wait until it is resolved.`
    : `Storage is running low: ${report.freeMiB} MiB free on the database's disk. When it is full, new tasks and answers are refused.`;
  return (
    <div role="alert" data-testid="storage-banner" className="border-b border-amber-300 bg-amber-50 text-sm text-amber-950 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-100">
      <p className="mx-auto max-w-6xl px-4 py-2">{text}</p>
    </div>
  );
}
