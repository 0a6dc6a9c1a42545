/**
 * oauth:rotate-key: a new signing key for the authorization server, used from the next start; the
 * previous keys stay published so that what they signed still verifies.
 */
import { rotateSigningKey, signingKeysFile } from '@/lib/auth/oauth/keys';

const key = rotateSigningKey();
console.log(`New signing key ${key.kid} in ${signingKeysFile()}; restart the server to sign with it.`);
