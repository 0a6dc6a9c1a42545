import { z } from 'zod';
import { logLevels, type LogLevel } from '@/lib/tools/define';
import { elicitationModeOf } from '../core/elicitation-modes';
import { ErrorCode, HttpError } from '../core/errors';
import { clientInfoLimits, clientInfoSchema, describeIssues, supportedProtocolVersions as legacyProtocolVersions } from '../core/schema';

/** The modern revisions this server speaks: stateless, every request carrying its version in `_meta`. */
export const modernProtocolVersions = ['2026-07-28'] as const;
/** Every revision this server speaks, newest first: what server/discover and -32022 list. */
export const allProtocolVersions: readonly string[] = [...modernProtocolVersions, ...legacyProtocolVersions];

export const metaKey = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** The official tasks extension: server-decided tasks, polled with tasks/get, answered with tasks/update. */
export const tasksExtension = 'io.modelcontextprotocol/tasks';

/** What a modern request says about its client, read from its `_meta` (never from an earlier request). */
export interface ModernClient {
  protocolVersion: string;
  name: string | null;
  version: string | null;
  capabilities: Record<string, unknown>;
  /** Only a request that names a level gets notifications/message, and only at or above it. */
  logLevel: LogLevel | undefined;
  progressToken: string | number | undefined;
}

const requestMetaSchema = z
  .object({
    [metaKey.protocolVersion]: z.string().max(64),
    [metaKey.clientInfo]: clientInfoSchema.optional(),
    [metaKey.clientCapabilities]: z
      .record(z.string(), z.unknown())
      .refine((capabilities) => JSON.stringify(capabilities).length <= clientInfoLimits.maxCapabilitiesBytes, {
        error: `must be at most ${clientInfoLimits.maxCapabilitiesBytes} bytes of JSON`,
      }),
    [metaKey.logLevel]: z.enum(logLevels).optional(),
    progressToken: z.union([z.string(), z.number()]).optional(),
  })
  .loose();

/** The `_meta` of a request's params, if it has one that is an object. */
export function requestMetaOf(params: unknown): Record<string, unknown> | undefined {
  const meta = typeof params === 'object' && params !== null ? (params as Record<string, unknown>)._meta : undefined;
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>) : undefined;
}

/**
 * The client a modern request describes: a `_meta` without the required fields, or with malformed
 * ones, gets -32602 naming the field (HTTP 400).
 */
export function readModernClient(params: unknown): ModernClient {
  const parsed = requestMetaSchema.safeParse(requestMetaOf(params) ?? {});
  if (!parsed.success) throw new HttpError(400, ErrorCode.InvalidParams, `Invalid params: _meta.${describeIssues(parsed.error)}`);
  const read = parsed.data;
  const info = read[metaKey.clientInfo];
  return {
    protocolVersion: read[metaKey.protocolVersion],
    name: info?.name ?? null,
    version: info?.version ?? null,
    capabilities: read[metaKey.clientCapabilities],
    logLevel: read[metaKey.logLevel],
    progressToken: read.progressToken,
  };
}

/** -32022 (HTTP 400) listing every version this server speaks, for a version it does not. */
export function requireSpokenVersion(client: ModernClient): void {
  if ((modernProtocolVersions as readonly string[]).includes(client.protocolVersion)) return;
  throw new HttpError(
    400,
    ErrorCode.UnsupportedProtocolVersion,
    `Unsupported protocol version ${client.protocolVersion}: this server speaks ${allProtocolVersions.join(', ')} (the older ones after initialize)`,
    {},
    { supported: allProtocolVersions, requested: client.protocolVersion },
  );
}

const objectAt = (value: unknown, key: string): Record<string, unknown> | undefined => {
  const found = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  return typeof found === 'object' && found !== null && !Array.isArray(found) ? (found as Record<string, unknown>) : undefined;
};

/** Whether the request declared the tasks extension: only then may it be answered with a task. */
export function declaresTasks(client: ModernClient): boolean {
  return objectAt(objectAt(client.capabilities, 'extensions'), tasksExtension) !== undefined;
}

/**
 * Whether the request's client can be sent this kind of input request as asked (form elicitation, or
 * sampling). Never an approval: a person gives it in the dashboard, not the client whose call waits for it.
 */
export function canBeAsked(client: ModernClient, kind: 'elicitation' | 'sampling' | 'approval'): boolean {
  if (kind === 'approval') return false;
  if (kind === 'sampling') return objectAt(client.capabilities, 'sampling') !== undefined;
  return elicitationModeOf(client.capabilities) === 'form';
}

/** Whether the request's client is sent a question as a link to the task's page: it declared URL-mode elicitation only. */
export function receivesLink(client: ModernClient, kind: 'elicitation' | 'sampling' | 'approval'): boolean {
  return kind === 'elicitation' && elicitationModeOf(client.capabilities) === 'url';
}

/** -32021: the request needs a capability it did not declare; `data` names it as ClientCapabilities. */
export function capabilityRequired(capability: 'sampling' | 'elicitation', what: string): HttpError {
  return new HttpError(
    400,
    ErrorCode.MissingRequiredClientCapability,
    `Missing required client capability: ${what} needs "${capability}"; declare it in _meta["${metaKey.clientCapabilities}"]`,
    {},
    { requiredCapabilities: { [capability]: {} } },
  );
}

/** -32021, naming the extension the request must declare. */
export function tasksExtensionRequired(what: string): HttpError {
  return new HttpError(
    400,
    ErrorCode.MissingRequiredClientCapability,
    `Missing required client capability: ${what} needs the ${tasksExtension} extension; declare it in _meta["${metaKey.clientCapabilities}"].extensions`,
    {},
    { requiredCapabilities: { extensions: { [tasksExtension]: {} } } },
  );
}

export const clientLabelOf = (client: ModernClient): string | null =>
  client.name ? `${client.name}${client.version ? ` ${client.version}` : ''}` : null;
