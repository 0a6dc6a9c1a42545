import { SymbolBadge, type BadgeStyle } from '@/components/ui/symbol-badge';
import type { UpstreamState } from '@/lib/upstreams/server';

const styles: Record<UpstreamState, BadgeStyle> = {
  up: { label: 'Up', icon: '✓', className: 'bg-emerald-50 text-emerald-800 ring-emerald-600/30 dark:bg-emerald-950 dark:text-emerald-200' },
  starting: { label: 'Starting', icon: '◐', className: 'bg-blue-50 text-blue-800 ring-blue-600/30 dark:bg-blue-950 dark:text-blue-200' },
  down: { label: 'Down', icon: '✕', className: 'bg-red-50 text-red-800 ring-red-600/30 dark:bg-red-950 dark:text-red-200' },
};

/** A server's state in words and a symbol, never colour alone. */
export function ServerStateBadge({ state }: { state: UpstreamState }) {
  return <SymbolBadge style={styles[state]} data={{ 'data-state': state }} />;
}
