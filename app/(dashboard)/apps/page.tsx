import Link from 'next/link';
import { DisconnectAppButton } from '@/components/apps/disconnect-app-button';
import { Card } from '@/components/ui/card';
import { RelativeTime } from '@/components/ui/relative-time';
import { listConnectedApps } from '@/lib/auth/oauth/consent';
import { requireUser } from '@/lib/auth/session';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Connected apps · MCP Task Server' };

const registrationLabels = {
  metadata_document: 'Metadata document (verified domain)',
  dynamic: 'Registered itself',
  preregistered: 'Registered by the operator',
};

export default async function ConnectedAppsPage() {
  const user = await requireUser('/apps');
  const apps = await listConnectedApps(user.id);
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold tracking-tight">Connected apps</h1>
        <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
          Applications you allowed to use this server as you. Disconnecting one ends its access at once, open connections included; it
          will have to ask you again. See{' '}
          <Link href="/connect" className="text-blue-700 underline dark:text-blue-400">
            Connect
          </Link>{' '}
          to add one.
        </p>
      </div>
      <Card>
        {apps.length === 0 ? (
          <p className="text-sm text-zinc-600 dark:text-zinc-400">No connected apps yet.</p>
        ) : (
          <div className="overflow-x-auto">
            <table className="w-full text-left text-sm">
              <caption className="sr-only">Your connected apps</caption>
              <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
                <tr>
                  <th scope="col" className="py-2 pr-4 font-medium">Application</th>
                  <th scope="col" className="hidden py-2 pr-4 font-medium sm:table-cell">How it registered</th>
                  <th scope="col" className="py-2 pr-4 font-medium">Allowed</th>
                  <th scope="col" className="hidden py-2 pr-4 font-medium md:table-cell">Last used</th>
                  <th scope="col" className="py-2 font-medium"><span className="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                {apps.map((app) => {
                  const name = app.clientName ?? app.clientId;
                  return (
                    <tr key={app.id} data-app-name={name}>
                      <td className="py-3 pr-4">
                        <div className="font-medium">{name}</div>
                        {app.redirectHost && <div className="font-mono text-xs text-zinc-500">{app.redirectHost}</div>}
                      </td>
                      <td className="hidden py-3 pr-4 text-zinc-600 sm:table-cell dark:text-zinc-400">{registrationLabels[app.registration]}</td>
                      <td className="py-3 pr-4 text-zinc-600 dark:text-zinc-400">
                        <RelativeTime at={app.allowedAt} />
                      </td>
                      <td className="hidden py-3 pr-4 text-zinc-600 md:table-cell dark:text-zinc-400">
                        {app.lastUsedAt ? <RelativeTime at={app.lastUsedAt} /> : 'Never'}
                      </td>
                      <td className="py-3 text-right">
                        <DisconnectAppButton consentId={app.id} name={name} />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </Card>
    </div>
  );
}
