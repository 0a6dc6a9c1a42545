import { Card } from '@/components/ui/card';
import { LocalDate } from '@/components/ui/local-date';
import { RelativeTime } from '@/components/ui/relative-time';
import type { UpstreamStatus } from '@/lib/upstreams/server';
import { RemoveSecretButton } from './remove-secret-button';
import { SecretForm } from './secret-form';
import { ServerStateBadge } from './server-state';

/** Past this many tools the list is folded, so that a big server does not push the others off the page. */
const toolsShownOpen = 8;

const transportLabels: Record<UpstreamStatus['transport'], string> = { stdio: 'stdio (started here)', http: 'Streamable HTTP' };

/**
 * One server of the servers file as a person sees it: its state, transport, tools and calls in flight,
 * and, when it takes each person's own secret, whether this person has given theirs.
 */
export function ServerCard({
  server,
  index,
  perUserTemplate,
  connectedAt,
}: {
  server: UpstreamStatus;
  index: number;
  /** The header value each person's secret goes into, for a server that takes one. */
  perUserTemplate: string | null;
  connectedAt: number | null;
}) {
  return (
    <div data-server={server.name}>
      <Card title={server.name} actions={<ServerStateBadge state={server.state} />}>
        <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-2 text-sm">
          <dt className="text-zinc-500 dark:text-zinc-400">Transport</dt>
          <dd>{transportLabels[server.transport]}</dd>
          <dt className="text-zinc-500 dark:text-zinc-400">State</dt>
          <dd data-testid="server-state">
            <StateInWords server={server} />
          </dd>
          <dt className="text-zinc-500 dark:text-zinc-400">Calls in flight</dt>
          <dd>{server.callsInFlight}</dd>
          <dt className="text-zinc-500 dark:text-zinc-400">Tools</dt>
          <dd className="min-w-0">
            <ToolList tools={server.tools} />
          </dd>
        </dl>
        {server.perUserHeader !== null && perUserTemplate !== null && (
          <div className="mt-4 space-y-3 border-t border-zinc-200 pt-4 dark:border-zinc-800">
            <h3 className="text-sm font-semibold">Your own {server.perUserHeader} header</h3>
            <div className="flex flex-wrap items-center gap-3">
              <p className="text-sm text-zinc-700 dark:text-zinc-300" data-testid="connection">
                {connectedAt !== null ? (
                  <>
                    Connected on <LocalDate at={connectedAt} />.
                  </>
                ) : (
                  <>Not connected: its tools fail for you until you save your secret here.</>
                )}
              </p>
              {connectedAt !== null && <RemoveSecretButton server={server.name} />}
            </div>
            <SecretForm id={`server-${index}-secret`} server={server.name} header={server.perUserHeader} template={perUserTemplate} connected={connectedAt !== null} />
          </div>
        )}
      </Card>
    </div>
  );
}

function StateInWords({ server }: { server: UpstreamStatus }) {
  if (server.state === 'up') return <>Up: its tools answer.</>;
  if (server.state === 'starting') return server.lastError ? <>Starting again; last error: {withoutFullStop(server.lastError)}.</> : <>Starting.</>;
  return (
    <>
      Down: {withoutFullStop(server.lastError ?? 'no reason given')}.{' '}
      {server.nextRetryAt !== null && (
        <>
          Tried again <RelativeTime at={server.nextRetryAt} />.
        </>
      )}
    </>
  );
}

function ToolList({ tools }: { tools: string[] }) {
  if (tools.length === 0) return <span className="text-zinc-500 dark:text-zinc-400">None yet (they are listed once it is up).</span>;
  const list = (
    <ul className="flex flex-wrap gap-1.5">
      {tools.map((tool) => (
        <li key={tool} className="rounded bg-zinc-100 px-1.5 py-0.5 font-mono text-xs break-all dark:bg-zinc-800">
          {tool}
        </li>
      ))}
    </ul>
  );
  if (tools.length <= toolsShownOpen) return list;
  return (
    <details>
      <summary className="cursor-pointer">{tools.length} tools</summary>
      <div className="mt-2">{list}</div>
    </details>
  );
}

/** An error is put inside a sentence of ours, which has its own full stop. */
const withoutFullStop = (text: string) => text.replace(/\.+$/, '');
