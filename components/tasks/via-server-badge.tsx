import Link from 'next/link';

/** Names the server of the servers file a task's tool comes from: the call was made there, not here. */
export function ViaServerBadge({ server }: { server: string | undefined }) {
  if (server === undefined) return null;
  return (
    <span
      data-testid="via-server"
      className="inline-block whitespace-nowrap rounded-full bg-sky-50 px-2 py-0.5 text-xs font-medium text-sky-900 ring-1 ring-inset ring-sky-600/30 dark:bg-sky-950 dark:text-sky-200"
    >
      {/* Not a flex box: one would drop the space between the words. */}
      via{' '}
      <Link href="/servers" className="underline" title={`The tool runs on ${server}; see it on the Servers page`}>
        {server}
      </Link>
    </span>
  );
}
