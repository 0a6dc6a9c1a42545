/**
 * Who this server is (the protocol's Implementation): initialize's `serverInfo` in the legacy era, and
 * `_meta["io.modelcontextprotocol/serverInfo"]` of every 2026-07-28 result, server/discover's included.
 * Its website is the dashboard, at APP_URL: where the person behind the tasks watches and answers them.
 */
export function serverInfoOf(serverVersion: string, appUrl: string) {
  return {
    name: 'mcp-task-server',
    title: 'MCP Task Server',
    version: serverVersion,
    description: 'Runs long tools as durable tasks that their owner can watch, answer and cancel in a browser dashboard.',
    websiteUrl: appUrl,
  };
}
