const msPerDay = 86_400_000;
/** The latest (and, negated, the earliest) time a Date holds. */
const maxTime = 8.64e15;
let cachedDay = Number.NaN;
let cachedDayPrefix = '';

const twoDigits = (value: number) => (value < 10 ? `0${value}` : `${value}`);
const threeDigits = (value: number) => (value < 10 ? `00${value}` : value < 100 ? `0${value}` : `${value}`);

/**
 * A stored time (milliseconds since the epoch) as `Date.prototype.toISOString` writes it, for the
 * timestamps of every task a client reads. Only the date part comes from a Date, once a day: in the
 * server's process `Date` is Next.js's wrapper, and a Date made per timestamp cost more than the rest
 * of a tasks/get's reply.
 */
export function isoTimestamp(time: number): string {
  // As a Date does: fractions of a millisecond dropped; a time no Date can hold throws its RangeError.
  if (!(Math.abs(time) <= maxTime)) return new Date(time).toISOString();
  const ms = Math.trunc(time);
  const day = Math.floor(ms / msPerDay);
  if (day !== cachedDay) {
    // "2026-12-06T" (or "+010000-01-01T" past year 9999): whatever the calendar, toISOString says it.
    const iso = new Date(day * msPerDay).toISOString();
    cachedDayPrefix = iso.slice(0, iso.indexOf('T') + 1);
    cachedDay = day;
  }
  const inDay = ms - day * msPerDay;
  const hours = Math.floor(inDay / 3_600_000);
  const minutes = Math.floor(inDay / 60_000) % 60;
  const seconds = Math.floor(inDay / 1000) % 60;
  return `${cachedDayPrefix}${twoDigits(hours)}:${twoDigits(minutes)}:${twoDigits(seconds)}.${threeDigits(inDay % 1000)}Z`;
}
