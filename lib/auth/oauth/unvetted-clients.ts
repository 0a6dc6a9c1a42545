import type { KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import { clientRegistration } from './client-registration';
import { renderOAuthErrorPage } from './error-page';

interface AuthorizationError {
  error?: string;
  error_description?: string;
  statusCode?: number;
  expose?: boolean;
}

/**
 * The library sends an authorization error to the client's redirect URI once that URI is registered.
 * A client that registered itself, or publishes its own metadata document, registered whatever URI
 * it liked, so that would make /oauth/authorize an open redirector to any site, with no person
 * involved (RFC 9700 section 4.11.2). For those clients an error found before the person has acted
 * is shown on our page instead; clients the operator registered still get theirs back. After the
 * person's own answer (Deny, on the resume step) the client is told, as it must be.
 */
export function showUnvettedClientErrorsHere(provider: Provider): void {
  const errorOfRequest = new WeakMap<KoaContextWithOIDC, AuthorizationError>();
  const remember = (ctx: KoaContextWithOIDC, error: Error) => errorOfRequest.set(ctx, error as AuthorizationError);
  provider.on('authorization.error', remember);
  provider.on('server_error', remember);
  provider.use(async (ctx, next) => {
    await next();
    const context = ctx as KoaContextWithOIDC & { _matchedRouteName?: string };
    const error = errorOfRequest.get(context);
    if (!error || context._matchedRouteName !== 'authorization') return;
    const clientId = context.oidc?.client?.clientId;
    if (clientId && (await clientRegistration(clientId)) === 'preregistered') return;
    ctx.remove('Location');
    // Some errors carry the status of the redirect that would have told the client (303).
    const status = error.statusCode ?? 400;
    ctx.status = !error.expose ? 500 : status >= 400 && status < 500 ? status : 400;
    ctx.type = 'html';
    ctx.body = renderOAuthErrorPage(
      error.expose ? { error: error.error, error_description: error.error_description } : { error: 'server_error' },
    );
  });
}
