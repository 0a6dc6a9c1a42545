'use client';

import { useEffect, useState } from 'react';

const localFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/**
 * A moment as a date and time in the reader's own time zone. The server does not know that zone, so it
 * renders the UTC date, and the browser puts the local one in its place once it runs.
 */
export function LocalDate({ at }: { at: number }) {
  const iso = new Date(at).toISOString();
  const [text, setText] = useState(`${iso.slice(0, 10)} (UTC)`);
  useEffect(() => setText(localFormat.format(at)), [at]);
  return (
    <time dateTime={iso} title={iso}>
      {text}
    </time>
  );
}
