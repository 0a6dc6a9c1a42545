import { findOAuthRecord } from '@/db/queries/oauth';
import type { ClientRegistration } from '@/db/schema';
import { hashOAuthId } from './adapter';

/** How a client came to be known: a URL client_id is a metadata document; the others were registered. */
export async function clientRegistration(clientId: string): Promise<ClientRegistration> {
  if (/^https:\/\//i.test(clientId)) return 'metadata_document';
  return (await findOAuthRecord('Client', hashOAuthId(clientId)))?.registeredVia === 'preregistered' ? 'preregistered' : 'dynamic';
}
