import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: object) => Promise<Buffer>;

/** OWASP's minimum for scrypt (N=2^17, r=8, p=1): 128 MiB and a few hundred milliseconds per hash. */
const currentParams = { N: 2 ** 17, r: 8, p: 1 };
const keyLength = 64;
const saltLength = 16;
/** Room for the current parameters; stored hashes asking for more memory than this are refused. */
const maxmem = 256 * 1024 * 1024;

type ScryptParams = { N: number; r: number; p: number };
type StoredHash = ScryptParams & { salt: Buffer; digest: Buffer };

export const passwordRules = { minLength: 8, maxLength: 200 };

/** scrypt with a per-user random salt, stored as `scrypt$N$r$p$salt$hash` so parameters can change later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(saltLength);
  const digest = await derive(password, salt, currentParams, keyLength);
  return ['scrypt', currentParams.N, currentParams.r, currentParams.p, salt.toString('base64url'), digest.toString('base64url')].join('$');
}

/**
 * Checks a password against a stored hash of any parameters this module ever wrote. A hash that does not
 * parse (wrong shape, short salt or digest, absurd parameters) never matches: a truncated digest would
 * otherwise compare equal to the first bytes of any password's hash.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parsed = parseStoredHash(stored);
  if (!parsed) {
    await burnDummyHash(password);
    return false;
  }
  const actual = await derive(password, parsed.salt, parsed, parsed.digest.length);
  return timingSafeEqual(actual, parsed.digest);
}

/** True when a stored hash was made with weaker parameters than today's and should be replaced at sign-in. */
export function needsRehash(stored: string | null): boolean {
  const parsed = parseStoredHash(stored);
  if (!parsed) return false;
  return parsed.N < currentParams.N || parsed.r < currentParams.r || parsed.p < currentParams.p || parsed.digest.length < keyLength;
}

let dummyHash: Promise<string> | undefined;

/**
 * Spends the same work as checking a real password, for accounts that do not exist or have no password,
 * so that the time a sign-in takes does not tell whether the email has an account.
 */
export async function burnDummyHash(password: string): Promise<void> {
  dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
  const parsed = parseStoredHash(await dummyHash)!;
  await derive(password, parsed.salt, parsed, parsed.digest.length);
}

function parseStoredHash(stored: string | null): StoredHash | null {
  const parts = stored?.split('$');
  if (!parts || parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4], 'base64url');
  const digest = Buffer.from(parts[5], 'base64url');
  const validParams = Number.isInteger(N) && N >= 2 && (N & (N - 1)) === 0 && Number.isInteger(r) && r >= 1 && Number.isInteger(p) && p >= 1;
  if (!validParams || 128 * N * r > maxmem || salt.length < saltLength || digest.length < keyLength) return null;
  return { N, r, p, salt, digest };
}

function derive(password: string, salt: Buffer, params: ScryptParams, length: number): Promise<Buffer> {
  return scryptAsync(password.normalize('NFKC'), salt, length, { N: params.N, r: params.r, p: params.p, maxmem });
}
