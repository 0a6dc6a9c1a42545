'use client';

import { useEffect, useState } from 'react';

const units: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];
const format = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

export function relativeTime(at: number, now: number): string {
  const diff = at - now;
  for (const [unit, ms] of units) {
    if (Math.abs(diff) >= ms || unit === 'second') return format.format(Math.round(diff / ms), unit);
  }
  return '';
}

/** "3 minutes ago", kept current, with the exact time on hover and for assistive technology. */
export function RelativeTime({ at }: { at: number }) {
  // The tick only re-renders; the time is read at every render, so a refreshed page is never stale.
  const [, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((tick) => tick + 1), 15_000);
    return () => clearInterval(timer);
  }, []);
  const iso = new Date(at).toISOString();
  return (
    <time dateTime={iso} title={iso} suppressHydrationWarning>
      {relativeTime(at, Date.now())}
    </time>
  );
}
