import { SymbolBadge, type BadgeStyle } from '@/components/ui/symbol-badge';
import type { TaskStatus } from '@/lib/tasks/states';

const styles: Record<TaskStatus, BadgeStyle> = {
  working: { label: 'Working', icon: '◐', className: 'bg-blue-50 text-blue-800 ring-blue-600/30 dark:bg-blue-950 dark:text-blue-200' },
  input_required: {
    label: 'Input required',
    icon: '?',
    className: 'bg-amber-50 text-amber-900 ring-amber-600/30 dark:bg-amber-950 dark:text-amber-200',
  },
  completed: { label: 'Completed', icon: '✓', className: 'bg-emerald-50 text-emerald-800 ring-emerald-600/30 dark:bg-emerald-950 dark:text-emerald-200' },
  failed: { label: 'Failed', icon: '✕', className: 'bg-red-50 text-red-800 ring-red-600/30 dark:bg-red-950 dark:text-red-200' },
  cancelled: { label: 'Cancelled', icon: '⊘', className: 'bg-zinc-100 text-zinc-700 ring-zinc-500/30 dark:bg-zinc-800 dark:text-zinc-300' },
};

export const statusLabel = (status: TaskStatus) => styles[status].label;

/** The status in words and a symbol, never colour alone. */
export function StatusBadge({ status }: { status: TaskStatus }) {
  return <SymbolBadge style={styles[status]} data={{ 'data-status': status }} />;
}
