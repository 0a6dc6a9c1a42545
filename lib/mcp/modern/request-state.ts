import { createHash, createHmac, randomUUID } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import { getServerSecret } from '@/lib/auth/secret';
import { ErrorCode, RpcError } from '../core/errors';

/**
 * The `requestState` of a multi round-trip tools/call (2026-07-28): it passes through the client, so it
 * is attacker-controlled input. It is a JWT (HS256, signed with a key derived from the server's secret,
 * by `jose`): it names the user, the task the call started, the method and a digest of the call's name
 * and arguments, and the keys of the links to the task's page the client accepted (so that its retries
 * are not sent them again), and lapses after `requestStateTtlMs`. State that fails any check is
 * refused, so it can neither be forged, nor replayed by another user, on another call, or late. It is
 * not single-use: the task it names is the durable state, and each retry reads the task as it is now.
 */

/** Long enough for a person to answer a question in their client; the task itself lives longer. */
export const requestStateTtlMs = 60 * 60 * 1000;

const audience = 'mcp-task-server:request-state';

const globalForKey = globalThis as unknown as { __mcpTaskServerRequestStateKey?: Uint8Array };

/** A key of its own, derived from the server's secret: a request state can never pass for a session or cursor. */
function signingKey(): Uint8Array {
  globalForKey.__mcpTaskServerRequestStateKey ??= new Uint8Array(createHmac('sha256', getServerSecret()).update('mcp request state v1').digest());
  return globalForKey.__mcpTaskServerRequestStateKey;
}

/** What a state is bound to: the call it may be echoed on. */
export interface CallBinding {
  userId: string;
  method: string;
  /** The tool's name for tools/call. */
  name: string;
  arguments: Record<string, unknown>;
}

/** Canonical JSON (keys sorted), so that the same arguments in another key order give the same digest. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const digestOf = (binding: CallBinding) => createHash('sha256').update(canonical([binding.method, binding.name, binding.arguments])).digest('base64url');

/** What a state carries besides its binding. */
export interface RoundState {
  taskId: string;
  /** Keys of questions whose link the client accepted: its person answers on the task's page. */
  linksAccepted: string[];
}

/**
 * The most JSON the accepted links may take in a state, so that every state stays within what
 * `openRequestState` reads; a key left out is only sent its link once more.
 */
const linksAcceptedBudget = 2000;

function withinBudget(keys: readonly string[]): string[] {
  const kept: string[] = [];
  let used = 2;
  for (const key of keys) {
    used += JSON.stringify(key).length + 1;
    if (used > linksAcceptedBudget) break;
    kept.push(key);
  }
  return kept;
}

export async function sealRequestState(binding: CallBinding, state: RoundState, now = Date.now()): Promise<string> {
  const links = withinBudget(state.linksAccepted);
  return await new SignJWT({ task: state.taskId, method: binding.method, digest: digestOf(binding), ...(links.length > 0 ? { links } : {}) })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(binding.userId)
    .setAudience(audience)
    .setIssuedAt(Math.floor(now / 1000))
    // Each round's state is new, even within the same second.
    .setJti(randomUUID())
    .setExpirationTime(Math.floor((now + requestStateTtlMs) / 1000))
    .sign(signingKey());
}

const refused = (why: string) => new RpcError(ErrorCode.InvalidParams, `Invalid params: requestState ${why}; call the tool again without requestState and inputResponses`);

/** What a state says, once it checks out for this user and this very call; -32602 otherwise. */
export async function openRequestState(state: string, binding: CallBinding): Promise<RoundState> {
  if (state.length > 4096) throw refused('is not one this server issued');
  let payload;
  try {
    ({ payload } = await jwtVerify(state, signingKey(), { algorithms: ['HS256'], audience, subject: binding.userId }));
  } catch (error) {
    if (error instanceof errors.JWTExpired) throw refused('has expired');
    if (error instanceof errors.JWTClaimValidationFailed && error.claim === 'sub') throw refused('was issued to another user');
    throw refused('is not one this server issued (or it was altered)');
  }
  if (payload.method !== binding.method || payload.digest !== digestOf(binding)) {
    throw refused(`belongs to another request (a ${String(payload.method)} with other arguments or another tool)`);
  }
  const links = payload.links ?? [];
  if (typeof payload.task !== 'string' || !Array.isArray(links) || !links.every((key) => typeof key === 'string')) throw refused('is not one this server issued');
  return { taskId: payload.task, linksAccepted: links };
}
