import Link from 'next/link';
import { Card } from '@/components/ui/card';
import { CodeBlock } from '@/components/ui/code-block';
import { requireUser } from '@/lib/auth/session';
import { getEnv } from '@/lib/env';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Connect a client · MCP Task Server' };

const tokenPlaceholder = 'YOUR_TOKEN';

export default async function ConnectPage() {
  await requireUser('/connect');
  const mcpUrl = `${getEnv().APP_URL}/mcp`;
  const vscode = JSON.stringify(
    {
      inputs: [{ type: 'promptString', id: 'mcp-task-token', description: 'MCP Task Server access token', password: true }],
      servers: { tasks: { type: 'http', url: mcpUrl, headers: { Authorization: 'Bearer ${input:mcp-task-token}' } } },
    },
    null,
    2,
  );
  const sdk = `import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const client = new Client({ name: 'my-agent', version: '1.0.0' });
await client.connect(
  new StreamableHTTPClientTransport(new URL('${mcpUrl}'), {
    requestInit: { headers: { Authorization: 'Bearer ${tokenPlaceholder}' } },
  }),
);

// Run a long tool as a task: it shows up live on the Tasks page.
const stream = client.experimental.tasks.callToolStream(
  { name: 'delay', arguments: { seconds: 30 } },
  CallToolResultSchema,
  { task: { ttl: 3_600_000 } },
);
for await (const message of stream) console.log(message.type, message);`;

  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold tracking-tight">Connect a client</h1>
        <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
          Most clients need only the URL below: they find out how to sign in by themselves, send you here to sign in and allow them, and
          then appear under{' '}
          <Link href="/apps" className="text-blue-700 underline dark:text-blue-400">
            Connected apps
          </Link>
          . Clients that take a header instead use a personal access token: replace <code className="font-mono">{tokenPlaceholder}</code> with a
          token from the{' '}
          <Link href="/tokens" className="text-blue-700 underline dark:text-blue-400">
            Tokens
          </Link>{' '}
          page.
        </p>
      </div>
      <Card title="MCP endpoint">
        <CodeBlock label="MCP URL" code={mcpUrl} />
      </Card>
      <Card title="Sign in from the client (one URL)">
        <ol className="list-decimal space-y-2 pl-5 text-sm">
          <li>
            <strong>Claude</strong> (web, desktop, mobile): Settings → Connectors → Add custom connector, paste the URL above.
          </li>
          <li>
            <strong>ChatGPT</strong>: Settings → Connectors → Create, paste the URL above and choose OAuth.
          </li>
          <li>
            <strong>VS Code</strong>: Command Palette → <em>MCP: Add Server…</em> → HTTP, paste the URL above.
          </li>
          <li>
            <strong>Claude Code</strong>: <code className="font-mono">claude mcp add --transport http tasks {mcpUrl}</code>, then{' '}
            <code className="font-mono">/mcp</code> → Authenticate.
          </li>
        </ol>
        <p className="mt-3 text-sm text-zinc-600 dark:text-zinc-400">
          Your browser opens this server: sign in if asked, check the application&apos;s name and where it sends you back, and press{' '}
          <strong>Allow</strong>. Its tasks run as you and show on your Tasks page. A connector that asks for a client id and secret gets them
          from the operator (<code className="font-mono">npm run oauth:client</code>).
        </p>
      </Card>
      <Card title="Claude Code with a token">
        <CodeBlock label="Claude Code command" code={`claude mcp add --transport http tasks ${mcpUrl} --header "Authorization: Bearer ${tokenPlaceholder}"`} />
      </Card>
      <Card title="MCP Inspector">
        <div className="space-y-3 text-sm">
          <CodeBlock label="Start the Inspector" code="npx @modelcontextprotocol/inspector" />
          <p>
            Choose transport <strong>Streamable HTTP</strong>, URL <code className="font-mono">{mcpUrl}</code>, and add the header{' '}
            <code className="font-mono">Authorization: Bearer {tokenPlaceholder}</code> under Authentication.
          </p>
        </div>
      </Card>
      <Card title="VS Code">
        <CodeBlock label="VS Code .vscode/mcp.json" code={vscode} />
      </Card>
      <Card title="TypeScript SDK">
        <CodeBlock label="TypeScript SDK snippet" code={sdk} />
      </Card>
    </div>
  );
}
