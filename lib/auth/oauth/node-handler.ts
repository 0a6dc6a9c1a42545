import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { getEnv } from '@/lib/env';
import { clientRegistration } from './client-registration';
import { allowConsent } from './consent';
import { renderOAuthErrorPage } from './error-page';
import { protectedResourceMetadata, resourceOfMetadataPath } from './metadata';
import { getOAuthProvider } from './provider';
import { signedInUserId } from './signed-in-user';

/**
 * The authorization server's mount in the Node server, ahead of Next.js. oidc-provider is a Koa
 * application and needs the raw Node request, which App Router route handlers do not give; so its
 * endpoints, the discovery documents and the two steps of an authorization that need its cookies
 * (continuing after sign-in, and the Allow/Deny form) are served here. The consent page itself is a
 * dashboard page (`/consent/[uid]`) that reads the stored interaction through lib/auth/oauth/consent.
 */
const discoveryPaths = new Set(['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']);
const interactionPath = /^\/oauth\/interaction\/([A-Za-z0-9_-]{1,64})(\/confirm)?$/;
const consentFormSchema = z.object({ decision: z.enum(['allow', 'deny']) });
const maxConsentFormBytes = 1024;

const globalForHandler = globalThis as unknown as {
  __mcpTaskServerOAuthCallback?: ReturnType<Awaited<ReturnType<typeof getOAuthProvider>>['callback']>;
};

/**
 * The provider builds the addresses it publishes and redirects to from the request's host and
 * protocol; a client must not be able to choose them (Host, X-Forwarded-Host), and behind a TLS proxy
 * the request arrives over http. So every request it sees says it came to APP_URL.
 */
function addressedToAppUrl(req: IncomingMessage): void {
  const appUrl = new URL(getEnv().APP_URL);
  req.headers.host = appUrl.host;
  req.headers['x-forwarded-host'] = appUrl.host;
  req.headers['x-forwarded-proto'] = appUrl.protocol.slice(0, -1);
}

/** Handles the request when it is an OAuth or discovery path and says so; false leaves it to Next.js. */
export async function handleOAuthRequest(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
  const resource = resourceOfMetadataPath(pathname, getEnv().APP_URL);
  if (resource) {
    serveProtectedResourceMetadata(req, res, resource);
    return true;
  }
  if (!discoveryPaths.has(pathname) && !pathname.startsWith('/oauth/')) return false;
  addressedToAppUrl(req);
  const interaction = interactionPath.exec(pathname);
  if (interaction) {
    await (interaction[2] ? confirmConsent(req, res, interaction[1]) : continueInteraction(req, res, interaction[1]));
    return true;
  }
  const provider = await getOAuthProvider();
  globalForHandler.__mcpTaskServerOAuthCallback ??= provider.callback();
  await globalForHandler.__mcpTaskServerOAuthCallback(req, res);
  return true;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

function sendErrorPage(res: ServerResponse, status: number, error: string, description: string): void {
  res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(renderOAuthErrorPage({ error, error_description: description }));
}

function redirect(res: ServerResponse, location: string): void {
  res.writeHead(303, { Location: location, 'Cache-Control': 'no-store' });
  res.end();
}

function serveProtectedResourceMetadata(req: IncomingMessage, res: ServerResponse, resource: string): void {
  const cors = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Methods': 'GET', 'Access-Control-Allow-Headers': '*' };
  if (req.method === 'OPTIONS') {
    res.writeHead(204, cors);
    res.end();
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { error: 'invalid_request', error_description: 'use GET' }, { Allow: 'GET, HEAD, OPTIONS' });
    return;
  }
  sendJson(res, 200, protectedResourceMetadata(getEnv().APP_URL, resource), { ...cors, 'Cache-Control': 'public, max-age=300' });
}

/**
 * After /oauth/authorize: the person must be signed in to the dashboard (NextAuth, and back here),
 * then the provider learns who they are, and asks for consent when what the client wants is not
 * already allowed.
 */
async function continueInteraction(req: IncomingMessage, res: ServerResponse, uid: string): Promise<void> {
  if (req.method !== 'GET') {
    sendErrorPage(res, 405, 'invalid_request', 'This address is only opened in the browser.');
    return;
  }
  // The sign-in page returns here with Next's client router, which fetches a flight payload first. A
  // plain answer (no side effects) makes the router load the address as a page, with its cookies.
  if (req.headers.rsc !== undefined || req.headers['next-router-prefetch'] !== undefined) {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end('Continue in the browser.');
    return;
  }
  const step = await signedInStep(req, res, uid);
  if (!step) return;
  const { provider, details, userId } = step;
  if (details.prompt.name === 'login' || details.session?.accountId !== userId) {
    await provider.interactionFinished(req, res, { login: { accountId: userId } }, { mergeWithLastSubmission: false });
    return;
  }
  redirect(res, `/consent/${uid}`);
}

function sendStepExpired(res: ServerResponse): void {
  sendErrorPage(res, 400, 'invalid_request', 'This authorization step has expired or was started in another browser. Start connecting again from the application.');
}

/**
 * The signed-in person and the authorization step this browser is in (its interaction cookie must
 * name `uid`); otherwise answers with the sign-in page (and back here) or an error page, and null.
 */
async function signedInStep(req: IncomingMessage, res: ServerResponse, uid: string) {
  const userId = await signedInUserId(req);
  if (!userId) {
    redirect(res, `/signin?${new URLSearchParams({ callbackUrl: `/oauth/interaction/${uid}` })}`);
    return null;
  }
  const provider = await getOAuthProvider();
  const details = await provider.interactionDetails(req, res).catch(() => null);
  if (!details || details.uid !== uid) {
    sendStepExpired(res);
    return null;
  }
  return { userId, provider, details };
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams | null> {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > maxConsentFormBytes) return null;
  }
  return new URLSearchParams(body);
}

/** The consent page's Allow/Deny form. Same-origin only: another site cannot press Allow for you. */
async function confirmConsent(req: IncomingMessage, res: ServerResponse, uid: string): Promise<void> {
  const appOrigin = new URL(getEnv().APP_URL).origin;
  if (req.method !== 'POST' || req.headers.origin !== appOrigin) {
    sendErrorPage(res, 403, 'invalid_request', 'Allow and Deny are only accepted from the consent page itself.');
    return;
  }
  const form = await readForm(req);
  const parsed = consentFormSchema.safeParse(form ? Object.fromEntries(form) : null);
  if (!parsed.success) {
    sendErrorPage(res, 400, 'invalid_request', 'The consent form was not understood. Go back and press Allow or Deny.');
    return;
  }
  const step = await signedInStep(req, res, uid);
  if (!step) return;
  const { provider, details, userId } = step;
  if (details.prompt.name !== 'consent' || details.session?.accountId !== userId) {
    sendStepExpired(res);
    return;
  }
  if (parsed.data.decision === 'deny') {
    await provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'The person declined to connect this application' },
      { mergeWithLastSubmission: false },
    );
    return;
  }
  const clientId = String(details.params.client_id);
  const client = await provider.Client.find(clientId);
  if (!client) {
    sendErrorPage(res, 400, 'invalid_client', 'This application is no longer registered. Start connecting again from the application.');
    return;
  }
  const grantId = await allowConsent(provider, {
    userId,
    client,
    registration: await clientRegistration(clientId),
    details,
  });
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}
