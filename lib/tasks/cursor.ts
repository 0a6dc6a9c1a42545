import { createHmac, timingSafeEqual } from 'node:crypto';

/** Where a page of a user's task list stopped: the last task's creation time and id. */
export interface ListPosition {
  createdAt: number;
  id: string;
}

function sign(payload: string, userId: string, secret: string): string {
  return createHmac('sha256', secret).update(`${userId}\n${payload}`).digest('base64url').slice(0, 22);
}

/**
 * An opaque cursor bound to the user it was issued to: a signed keyset position, so a client can neither
 * forge one nor reuse another user's.
 */
export function encodeCursor(position: ListPosition, userId: string, secret: string): string {
  const payload = Buffer.from(JSON.stringify([position.createdAt, position.id])).toString('base64url');
  return `${payload}.${sign(payload, userId, secret)}`;
}

/** The position in a cursor, or null when it is malformed, tampered with or another user's. */
export function decodeCursor(cursor: string, userId: string, secret: string): ListPosition | null {
  const [payload, signature, ...rest] = cursor.split('.');
  if (!payload || !signature || rest.length > 0) return null;
  const expected = Buffer.from(sign(payload, userId, secret));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const decoded: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (
      Array.isArray(decoded) &&
      decoded.length === 2 &&
      Number.isSafeInteger(decoded[0]) &&
      typeof decoded[1] === 'string'
    ) {
      return { createdAt: decoded[0], id: decoded[1] };
    }
  } catch {
    // Falls through: a signed payload that does not parse is as bad as an unsigned one.
  }
  return null;
}
