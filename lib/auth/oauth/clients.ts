import { randomBytes } from 'node:crypto';
import { deleteOAuthClientAndGrants, upsertOAuthRecord } from '@/db/queries/oauth';
import { hashClientSecret, hashOAuthId } from './adapter';
import { newClientId } from './client-id';
import { getOAuthProvider } from './provider';

/**
 * A client registered by the operator, for connectors that ask for a client id and secret. The
 * provider validates the metadata exactly as it would a dynamic registration.
 */
export async function preregisterClient(input: { name: string; redirectUris: string[]; confidential: boolean }): Promise<{
  clientId: string;
  clientSecret: string | null;
}> {
  const provider = await getOAuthProvider();
  const clientId = newClientId();
  const clientSecret = input.confidential ? randomBytes(32).toString('base64url') : null;
  const metadata = {
    client_id: clientId,
    client_name: input.name,
    redirect_uris: input.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    client_id_issued_at: Math.floor(Date.now() / 1000),
    ...(clientSecret
      ? { client_secret: clientSecret, client_secret_expires_at: 0, token_endpoint_auth_method: 'client_secret_basic' }
      : { token_endpoint_auth_method: 'none' }),
  };
  await (provider.Client as unknown as { validate(metadata: object): Promise<void> }).validate(metadata);
  await upsertOAuthRecord({
    model: 'Client',
    idHash: hashOAuthId(clientId),
    payload: clientSecret ? { ...metadata, client_secret: hashClientSecret(clientSecret) } : metadata,
    grantId: null,
    uid: null,
    expiresAt: null,
    registeredVia: 'preregistered',
  });
  return { clientId, clientSecret };
}

/** Removes a client and ends what it holds: its next request gets invalid_client, its tokens 401 at /mcp. */
export async function deleteClient(clientId: string): Promise<void> {
  await deleteOAuthClientAndGrants(clientId, hashOAuthId(clientId));
}
