/**
 * How far V8 lets the heap grow past what its last full collection left live, before it collects the
 * whole heap again. V8 chooses two to four times the live size on a busy server: with ten thousand
 * waiting calls (about 280 MB live) that is over a gigabyte of RSS. Here the growth is `percent` of the
 * live size, but never less than `minStepBytes`: a small heap that a burst of work fills with garbage
 * would otherwise be collected whole every few megabytes.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

export const minGrowthStepBytes = 32 * 1024 * 1024;

/** The growth, in whole percent of the live size, that gives at least `minStepBytes` of room. */
export function growthPercentFor(liveBytes: number, percent: number, minStepBytes = minGrowthStepBytes): number {
  if (liveBytes <= 0) return Math.max(percent, 100);
  return Math.max(percent, Math.ceil((minStepBytes / liveBytes) * 100));
}

/**
 * Sets the growth now, and again after every full collection from the size it left (V8 reads the
 * setting when it sets the next limit). 0 leaves V8's own policy. `setFlags` is V8's own setter but in
 * tests; the returned function stops following collections.
 */
export function keepHeapGrowth(percent: number, setFlags: (flags: string) => void = (flags) => v8.setFlagsFromString(flags)): () => void {
  if (percent <= 0) return () => {};
  let applied = 0;
  const apply = () => {
    const wanted = growthPercentFor(v8.getHeapStatistics().used_heap_size, percent);
    if (wanted === applied) return;
    applied = wanted;
    setFlags(`--heap-growing-percent=${wanted}`);
  };
  apply();
  const observer = new PerformanceObserver((list) => {
    if (list.getEntries().some((entry) => ((entry as { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) apply();
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}
