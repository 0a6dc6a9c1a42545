const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

/**
 * The page for errors found before the redirect URI can be trusted (unknown client, wrong
 * redirect_uri, expired step): shown to the person, never sent back to the client.
 */
export function renderOAuthErrorPage(out: Record<string, string | undefined>): string {
  const error = escapeHtml(out.error ?? 'server_error');
  const description = escapeHtml(out.error_description ?? 'The request could not be completed.');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authorization failed - MCP Task Server</title>
<style>body{font-family:system-ui,sans-serif;background:#fafafa;color:#18181b;display:flex;justify-content:center;padding:4rem 1rem}
main{max-width:28rem;background:#fff;border:1px solid #e4e4e7;border-radius:.75rem;padding:1.5rem}code{background:#f4f4f5;padding:.1rem .3rem;border-radius:.25rem}</style>
</head><body><main><h1>Authorization failed</h1><p>${description}</p><p>Error: <code>${error}</code></p>
<p>Go back to the application and try connecting again. <a href="/tasks">Open the dashboard</a></p></main></body></html>`;
}
