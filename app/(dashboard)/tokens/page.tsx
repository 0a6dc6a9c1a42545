import { CreateTokenForm } from '@/components/tokens/create-token-form';
import { RevokeTokenButton } from '@/components/tokens/revoke-token-button';
import { Card } from '@/components/ui/card';
import { RelativeTime } from '@/components/ui/relative-time';
import { listAccessTokens } from '@/lib/auth/tokens';
import { requireUser } from '@/lib/auth/session';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Access tokens · MCP Task Server' };

export default async function TokensPage() {
  const user = await requireUser('/tokens');
  const tokens = await listAccessTokens(user.id);
  const now = Date.now();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold tracking-tight">Access tokens</h1>
        <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
          MCP clients authenticate with a personal access token sent as <code className="font-mono">Authorization: Bearer …</code>. A revoked
          token is refused at once.
        </p>
      </div>
      <Card title="Create a token">
        <CreateTokenForm />
      </Card>
      <Card title="Your tokens">
        {tokens.length === 0 ? (
          <p className="text-sm text-zinc-600 dark:text-zinc-400">No tokens yet.</p>
        ) : (
          <div className="overflow-x-auto">
            <table className="w-full text-left text-sm">
              <caption className="sr-only">Your access tokens</caption>
              <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
                <tr>
                  <th scope="col" className="py-2 pr-4 font-medium">Name</th>
                  <th scope="col" className="py-2 pr-4 font-medium">Token</th>
                  <th scope="col" className="hidden py-2 pr-4 font-medium sm:table-cell">Created</th>
                  <th scope="col" className="hidden py-2 pr-4 font-medium md:table-cell">Last used</th>
                  <th scope="col" className="py-2 pr-4 font-medium">Expires</th>
                  <th scope="col" className="py-2 font-medium"><span className="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                {tokens.map((token) => {
                  const expired = token.expiresAt !== null && token.expiresAt <= now;
                  return (
                    <tr key={token.id} data-token-name={token.name}>
                      <td className="py-3 pr-4 font-medium">{token.name}</td>
                      <td className="py-3 pr-4 font-mono text-xs text-zinc-600 dark:text-zinc-400">mcp_pat_…{token.lastFour}</td>
                      <td className="hidden py-3 pr-4 text-zinc-600 sm:table-cell dark:text-zinc-400">
                        <RelativeTime at={token.createdAt} />
                      </td>
                      <td className="hidden py-3 pr-4 text-zinc-600 md:table-cell dark:text-zinc-400">
                        {token.lastUsedAt ? <RelativeTime at={token.lastUsedAt} /> : 'Never'}
                      </td>
                      <td className="py-3 pr-4 text-zinc-600 dark:text-zinc-400">
                        {token.expiresAt ? <RelativeTime at={token.expiresAt} /> : 'Never'}
                      </td>
                      <td className="py-3 text-right">
                        {token.revokedAt ? (
                          <span className="text-xs font-medium text-zinc-500">Revoked</span>
                        ) : expired ? (
                          <span className="text-xs font-medium text-zinc-500">Expired</span>
                        ) : (
                          <RevokeTokenButton tokenId={token.id} name={token.name} />
                        )}
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
