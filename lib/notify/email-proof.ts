import { createHmac, randomUUID } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import { reserveEmailConfirmation, useEmailConfirmation } from '@/db/queries/email-confirmations';
import type { User } from '@/db/queries/users';
import { getServerSecret } from '@/lib/auth/secret';
import type { MailSender } from './mail';

/**
 * Proving an address before e-mail goes to it. Sign-up proves nothing, and a notification carries text a
 * tool chose under this server's sender, so e-mail is turned on only for an address its owner confirmed
 * with a link sent to it (or one GitHub or Google vouched for). The link is a JWT (HS256, `jose`, a key
 * derived from the server's secret) naming the account, the address and a stored single-use record:
 * it cannot be forged or changed, and works once, for an hour, signed in as the account it names.
 */

/** Long enough to find the message; a new one is a press away. */
export const confirmationLinkTtlMs = 60 * 60 * 1000;
/** Links sent per account an hour: each press makes the server mail an address nobody has proved yet. */
export const confirmationLinksPerHour = 3;

const audience = 'mcp-task-server:email-confirmation';
export const confirmationPath = '/notifications/confirm';

const globalForKey = globalThis as unknown as { __mcpTaskServerEmailProofKey?: Uint8Array };

/** A key of its own, derived from the server's secret: a link can never pass for a session or a request state. */
function signingKey(): Uint8Array {
  globalForKey.__mcpTaskServerEmailProofKey ??= new Uint8Array(createHmac('sha256', getServerSecret()).update('email confirmation v1').digest());
  return globalForKey.__mcpTaskServerEmailProofKey;
}

/** Mails the account's address a link that proves it, within the hourly allowance. */
export async function sendConfirmationLink(user: Pick<User, 'id' | 'email'>, mail: MailSender, appUrl: string, now = Date.now()): Promise<{ ok: true } | { error: string }> {
  const id = randomUUID();
  const expiresAt = now + confirmationLinkTtlMs;
  // Stored before sending: a message the mail server refused still counts against the allowance.
  const reserved = await reserveEmailConfirmation({ id, userId: user.id, email: user.email, createdAt: now, expiresAt }, confirmationLinksPerHour);
  if (!reserved.ok) {
    const minutes = Math.max(1, Math.ceil((reserved.sentAt[0] + 60 * 60 * 1000 - now) / 60_000));
    return { error: `At most ${confirmationLinksPerHour} links an hour: open the newest one you were sent, or try again in ${minutes} minute${minutes === 1 ? '' : 's'}.` };
  }
  const token = await new SignJWT({ email: user.email })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(user.id)
    .setAudience(audience)
    .setJti(id)
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(expiresAt / 1000))
    .sign(signingKey());
  const link = new URL(confirmationPath, appUrl);
  link.searchParams.set('token', token);
  try {
    await mail.transport.sendMail({
      from: mail.from,
      to: user.email,
      subject: 'Confirm your address for task notifications',
      text: [
        `Someone, we hope you, asked ${appUrl} to send the task notifications of the account ${user.email} to this address.`,
        '',
        `Confirm that it is yours: ${link}`,
        '',
        `The link works once, for an hour, signed in as ${user.email}. If you did not ask for it, ignore this message: nothing will be sent to this address.`,
      ].join('\n'),
    });
  } catch (error) {
    return { error: `The mail server did not take the message (${error instanceof Error ? error.message : String(error)}): try again in a moment.` };
  }
  return { ok: true };
}

export type ConfirmationResult = { ok: true; message: string } | { ok: false; message: string };

const sendAnother = 'Send a new one from Notifications.';

/** Uses a confirmation link for the signed-in `user`; anything but a good link changes nothing and says why. */
export async function confirmEmailAddress(user: Pick<User, 'id' | 'email' | 'verifiedEmail'>, token: string | undefined, now = Date.now()): Promise<ConfirmationResult> {
  if (!token) return { ok: false, message: `This page needs the link from the confirmation e-mail, whole. ${sendAnother}` };
  const notOurs = { ok: false, message: `This link is not one this server sent, or it was changed on the way (a mail program may have cut it short). ${sendAnother}` } as const;
  if (token.length > 2048) return notOurs;
  let claims;
  try {
    // jose's clock is `new Date()`; the record's is Date.now(): both are read from the same moment.
    ({ payload: claims } = await jwtVerify(token, signingKey(), { algorithms: ['HS256'], audience, currentDate: new Date(now) }));
  } catch (error) {
    if (error instanceof errors.JWTExpired) return { ok: false, message: `This link has expired: links work for an hour. ${sendAnother}` };
    return notOurs;
  }
  if (typeof claims.jti !== 'string' || typeof claims.email !== 'string' || typeof claims.sub !== 'string') return notOurs;
  if (claims.sub !== user.id) {
    return { ok: false, message: `This link was sent for another account, not ${user.email}: sign out, and sign in as the account it was sent for. Nothing was changed.` };
  }
  const outcome = await useEmailConfirmation(claims.jti, user.id, user.email, now);
  switch (outcome) {
    case 'confirmed':
      return { ok: true, message: `${user.email} is confirmed: e-mail notifications can go to it.` };
    case 'used':
      return user.verifiedEmail === user.email
        ? { ok: false, message: `This link was used already (each works once), and ${user.email} is confirmed.` }
        : { ok: false, message: `This link was used already: each works once. ${sendAnother}` };
    case 'expired':
      return { ok: false, message: `This link has expired: links work for an hour. ${sendAnother}` };
    case 'another-address':
      return { ok: false, message: `This link was sent to another address than this account’s (${user.email}). Nothing was changed. ${sendAnother}` };
    case 'another-account':
      return { ok: false, message: `This link was sent for another account, not ${user.email}: sign out, and sign in as the account it was sent for. Nothing was changed.` };
    case 'unknown':
      return notOurs;
  }
}
