import { notFound } from 'next/navigation';
import { buttonClass } from '@/components/ui/button';
import { describeConsentRequest } from '@/lib/auth/oauth/consent';
import { requireUser } from '@/lib/auth/session';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Allow access? · MCP Task Server' };

/**
 * Serving a metadata document proves control of one URL, which anyone with a page on a shared host
 * (raw.githubusercontent.com, a gist) or a look-alike domain has: the page names the client by that
 * URL, whole, and vouches for nothing more.
 */
const identityText = {
  metadata_document: (clientId: string) => `Identified by the address of its description, ${clientId}. The name above is the application's own.`,
  dynamic: () => 'Self-asserted: the application registered itself here; its name is not verified.',
  preregistered: () => "Registered by this server's operator.",
};

/**
 * The consent step of an authorization: the Allow/Deny form posts to the authorization server's
 * interaction endpoint (served beside Next.js, where its cookies are), which finishes the step.
 */
export default async function ConsentPage({ params }: { params: Promise<{ uid: string }> }) {
  const { uid } = await params;
  const user = await requireUser(`/oauth/interaction/${encodeURIComponent(uid)}`);
  const request = await describeConsentRequest(uid, user.id);
  if (!request) notFound();
  return (
    <section className="rounded-lg border border-zinc-200 bg-white p-6 shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
      <h1 className="text-xl font-semibold tracking-tight">Connect {request.clientName}?</h1>
      <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
        {request.wantsMore ? 'You connected this application before; it now asks for more.' : 'An application wants to use this server as you.'}
      </p>
      <dl className="mt-4 space-y-3 text-sm">
        <div>
          <dt className="font-medium">Who it is</dt>
          <dd className="text-zinc-700 dark:text-zinc-300" data-testid="client-identity">
            {identityText[request.registration](request.clientId)}
          </dd>
        </div>
        {request.redirectHost && (
          <div>
            <dt className="font-medium">Where you go back to</dt>
            <dd className="font-mono text-zinc-700 dark:text-zinc-300" data-testid="redirect-host">
              {request.redirectHost}
            </dd>
          </div>
        )}
        {request.redirectElsewhereThan && (
          <div>
            <dt className="font-medium text-amber-700 dark:text-amber-400">Check where you go back to</dt>
            <dd className="text-amber-700 dark:text-amber-400" data-testid="redirect-warning">
              It sends you back to {request.redirectHost ?? 'an address it did not name'}, not to {request.redirectElsewhereThan}, where its
              description is. Allow only if you expected that.
            </dd>
          </div>
        )}
        <div>
          <dt className="font-medium">What it may do</dt>
          <dd>
            <ul className="list-disc pl-5 text-zinc-700 dark:text-zinc-300">
              {request.abilities.map((ability) => (
                <li key={ability}>{ability}</li>
              ))}
            </ul>
          </dd>
        </div>
        <div>
          <dt className="font-medium">As</dt>
          <dd className="text-zinc-700 dark:text-zinc-300">{user.email}</dd>
        </div>
      </dl>
      <form method="post" action={`/oauth/interaction/${encodeURIComponent(uid)}/confirm`} className="mt-6 flex gap-3">
        <button type="submit" name="decision" value="allow" className={buttonClass('primary')}>
          Allow
        </button>
        <button type="submit" name="decision" value="deny" className={buttonClass('secondary')}>
          Deny
        </button>
      </form>
      <p className="mt-4 text-xs text-zinc-600 dark:text-zinc-400">You can disconnect it at any time under Connected apps.</p>
    </section>
  );
}
