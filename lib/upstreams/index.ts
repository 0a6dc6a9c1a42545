import { addToolSource, toolsChanged } from '@/lib/tools/catalogue';
import type { PerUserHeader, UpstreamConfig } from './config';
import { prefixSeparator, UpstreamServer, type UpstreamStatus } from './server';

/**
 * The upstream servers of this process, on globalThis because npm start's server and Next's route
 * bundles each load their own copy of this module.
 */
const globalForUpstreams = globalThis as unknown as { __mcpTaskServerUpstreams?: { servers: UpstreamServer[]; ready: Promise<void> } };

/** The longest the start waits for the servers to come up before it resumes their interrupted tasks. */
const readyWithinMs = 30_000;

/**
 * Starts every server of the servers file (once per process) and adds each to the catalogue. Resolves
 * once each has come up or failed its first attempt (or after 30 s): a server that is down does not hold
 * the others back, and is tried again with backoff.
 */
export function startUpstreams(configs: UpstreamConfig[]): Promise<void> {
  if (globalForUpstreams.__mcpTaskServerUpstreams) return globalForUpstreams.__mcpTaskServerUpstreams.ready;
  const servers = configs.map((config) => new UpstreamServer(config, toolsChanged));
  for (const server of servers) addToolSource(server);
  const started = Promise.all(servers.map((server) => server.start())).then(() => {});
  const ready = Promise.race([started, new Promise<void>((resolve) => setTimeout(resolve, readyWithinMs).unref())]);
  globalForUpstreams.__mcpTaskServerUpstreams = { servers, ready };
  return ready;
}

/** Resolves once the servers have had their first chance to come up (at once without a servers file). */
export function upstreamsReady(): Promise<void> {
  return globalForUpstreams.__mcpTaskServerUpstreams?.ready ?? Promise.resolve();
}

export function upstreamStatuses(): UpstreamStatus[] {
  return (globalForUpstreams.__mcpTaskServerUpstreams?.servers ?? []).map((server) => server.status());
}

/** The servers a person may use (by their account's email), with their state. */
export function upstreamStatusesFor(email: string | null): UpstreamStatus[] {
  return (globalForUpstreams.__mcpTaskServerUpstreams?.servers ?? []).filter((server) => !server.allows || server.allows(email)).map((server) => server.status());
}

/** Stops every server (the process is going away): stdio children are ended, HTTP sessions closed. */
export async function stopUpstreams(): Promise<void> {
  await Promise.all((globalForUpstreams.__mcpTaskServerUpstreams?.servers ?? []).map((server) => server.stop()));
}

/** The server of the servers file a tool comes from (by its prefix), for "via <server>" on a task's page. */
export function serverOfTool(toolName: string): string | undefined {
  const servers = globalForUpstreams.__mcpTaskServerUpstreams?.servers ?? [];
  return servers.find((server) => toolName.startsWith(`${server.config.toolPrefix}${prefixSeparator}`))?.config.name;
}

/** The header (and its template) a server's entry has each person give their own secret for, by the server's name. */
export function perUserHeaderOf(serverName: string): PerUserHeader | undefined {
  const servers = globalForUpstreams.__mcpTaskServerUpstreams?.servers ?? [];
  return servers.find((server) => server.config.name === serverName)?.config.perUserHeader;
}
