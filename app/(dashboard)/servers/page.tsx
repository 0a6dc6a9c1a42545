import { RefreshWhileChanging } from '@/components/servers/refresh-while-changing';
import { ServerCard } from '@/components/servers/server-card';
import { Card } from '@/components/ui/card';
import { requireUser } from '@/lib/auth/session';
import { perUserHeaderOf, upstreamStatuses, upstreamStatusesFor } from '@/lib/upstreams';
import { upstreamSecretsOf } from '@/lib/upstreams/credentials';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Servers · MCP Task Server' };

export default async function ServersPage() {
  const user = await requireUser('/servers');
  const servers = upstreamStatusesFor(user.email);
  // Only the servers' names and when each secret was saved: the sealed secrets never leave the database here.
  const secrets = servers.some((server) => server.perUserHeader !== null) ? await upstreamSecretsOf(user.id) : new Map<string, number>();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold tracking-tight">Servers</h1>
        <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
          The MCP servers this server runs for you. Their tools are offered on <code className="font-mono">/mcp</code> as{' '}
          <code className="font-mono">{'<server>__<tool>'}</code>, and every call of one is a task of yours, listed under Tasks.
        </p>
      </div>
      <RefreshWhileChanging changing={servers.some((server) => server.state !== 'up')} />
      {servers.length === 0 ? (
        <NoServers configured={upstreamStatuses().length > 0} />
      ) : (
        servers.map((server, index) => (
          <ServerCard
            key={server.name}
            server={server}
            index={index}
            perUserTemplate={perUserHeaderOf(server.name)?.template ?? null}
            connectedAt={secrets.get(server.name) ?? null}
          />
        ))
      )}
    </div>
  );
}

function NoServers({ configured }: { configured: boolean }) {
  return (
    <Card title="No servers for you yet">
      <div className="space-y-2 text-sm text-zinc-700 dark:text-zinc-300">
        {configured ? (
          <p>
            None of the servers here is open to you: an entry of the servers file that has a <code className="font-mono">users</code> list
            is open only to the emails and <code className="font-mono">@domains</code> it names. Ask the operator to add you.
          </p>
        ) : (
          <p>
            This server runs no MCP servers of its own yet. An operator adds them by writing their entries, in the{' '}
            <code className="font-mono">mcpServers</code> format of <code className="font-mono">claude_desktop_config.json</code>,{' '}
            <code className="font-mono">.cursor/mcp.json</code> or <code className="font-mono">.mcp.json</code>, to a file, naming that file
            in <code className="font-mono">MCP_SERVERS_FILE</code>, and restarting the server.
          </p>
        )}
        <p>
          {/* The app serves no copy of the README and knows no address of its source, so the section is named, not linked. */}
          The README’s section <strong className="font-medium">The servers people already run</strong> shows a complete file and how to move
          one’s <code className="font-mono">claude_desktop_config.json</code> over.
        </p>
      </div>
    </Card>
  );
}
