export default function HomePage() {
  return (
    <main className="mx-auto max-w-2xl px-6 py-16">
      <h1 className="text-2xl font-semibold">MCP Task Server</h1>
      <p className="mt-4 text-zinc-600 dark:text-zinc-400">
        The MCP endpoint is at <code>/mcp</code>. Create an access token with{' '}
        <code>npm run --silent token:create -- --email you@example.com</code> and connect your client with{' '}
        <code>Authorization: Bearer &lt;token&gt;</code>.
      </p>
    </main>
  );
}
