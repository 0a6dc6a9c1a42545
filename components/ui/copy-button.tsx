'use client';

import { useState } from 'react';
import { Button } from './button';

/** Copies text to the clipboard and says so, for sighted and screen-reader users alike. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <>
      <Button
        variant="secondary"
        aria-label={label}
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
          } catch {
            // Clipboard access can be refused (insecure context); selecting the text is the fallback.
            return;
          }
          setCopied(true);
          setTimeout(() => setCopied(false), 2000);
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </Button>
      <span className="sr-only" aria-live="polite">
        {copied ? 'Copied to the clipboard' : ''}
      </span>
    </>
  );
}
