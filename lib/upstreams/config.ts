import fs from 'node:fs';
import { z } from 'zod';

/**
 * The servers file (MCP_SERVERS_FILE): the `mcpServers` JSON that Claude Desktop, Cursor and Claude Code
 * already use, read so that the operator can point us at the file they have. Each entry becomes an
 * UpstreamConfig; our own options sit beside the client's keys, and keys we do not know are ignored,
 * since other clients keep their own settings there. A bad file stops the server at start with one line
 * naming the file, the entry and the field.
 */

/** A header sent with every request of one person, carrying that person's own secret for the server. */
export interface PerUserHeader {
  name: string;
  /** Contains "{secret}" exactly once, e.g. "Bearer {secret}". */
  template: string;
}

export type UpstreamTransport =
  | { kind: 'stdio'; command: string; args: string[]; env: Record<string, string>; cwd?: string }
  | { kind: 'http'; url: string; headers: Record<string, string> };

export interface UpstreamConfig {
  /** The key under mcpServers. */
  name: string;
  transport: UpstreamTransport;
  /** Tools whose calls wait for a person's approval: every tool, or the listed upstream tool names. */
  approve: { all: boolean; tools: string[] };
  /** Upstream tool names safe to call again after an interruption. */
  resumable: string[];
  /** Upstream tool names never run as tasks (their taskSupport is forbidden). */
  instant: string[];
  /** Lower-case emails and "@domain" entries; null admits every signed-in person. */
  users: string[] | null;
  maxConcurrent: number;
  timeoutMs: number;
  toolPrefix: string;
  perUserHeader?: PerUserHeader;
}

export class ServersFileError extends Error {
  override name = 'ServersFileError';

  /** Kept to one line whatever went into it, so a log line or a start-up message stays readable. */
  constructor(message: string) {
    super(oneLine(message));
  }
}

const DEFAULT_MAX_CONCURRENT = 8;
const DEFAULT_TIMEOUT_MS = 10 * 60_000;
/** "__" is kept out of prefixes so that it can separate a prefix from an upstream tool's name. */
const TOOL_PREFIX = /^[A-Za-z0-9_.-]{1,64}$/;
const TOOL_PREFIX_RULE = '1 to 64 letters, digits, "_", "." or "-", without "__"';
/** RFC 9110 token: the characters an HTTP field name may hold. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;
const HTTP_TYPES = ['http', 'streamable-http', 'streamableHttp'];

/** Reads and validates the servers file; throws a ServersFileError when it cannot be used. */
/** At start: a servers file that is not valid stops the process with one line naming the file, the entry and the field. */
export function exitUnlessServersFileFits(file: string | undefined): void {
  if (!file) return;
  try {
    loadServersFile(file);
  } catch (error) {
    if (!(error instanceof ServersFileError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
}

export function loadServersFile(file: string, env: Readonly<Record<string, string | undefined>> = process.env): UpstreamConfig[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new ServersFileError(`MCP_SERVERS_FILE ${file}: cannot be read: ${readFailure(error)}`);
  }
  return parseServersFile(text, file, env);
}

/** Validates the text of a servers file; `file` only names it in error messages. */
export function parseServersFile(text: string, file: string, env: Readonly<Record<string, string | undefined>> = process.env): UpstreamConfig[] {
  const fail = (where: string, message: string) => new ServersFileError(`MCP_SERVERS_FILE ${file}: ${where}${message}`);
  const document = parseJson(text.replace(/^\uFEFF/, ''), (message) => fail('', message));
  if (!isPlainObject(document)) throw fail('', 'must hold a JSON object like { "mcpServers": { … } }');
  const servers = document.mcpServers;
  if (servers === undefined) throw fail('', 'has no "mcpServers" object; write { "mcpServers": {} } for no servers');
  if (!isPlainObject(servers)) throw fail('mcpServers: ', 'must be an object whose keys name the servers');

  const schemas = entrySchemas(env);
  const configs: UpstreamConfig[] = [];
  const prefixOwners = new Map<string, string>();
  for (const [name, entry] of Object.entries(servers)) {
    const outcome = parseEntry(name, entry, schemas);
    if (!outcome.ok) throw fail(`${entryPath(name, outcome.path)}: `, outcome.message);
    const config = outcome.config;
    if (!config) continue;
    const owner = prefixOwners.get(config.toolPrefix.toLowerCase());
    if (owner !== undefined) {
      throw fail(
        `${entryPath(name, ['toolPrefix'])}: `,
        `tool prefix "${config.toolPrefix}" is also the tool prefix of ${entryPath(owner, [])} (compared without case); ` +
          'give one of them another "toolPrefix"',
      );
    }
    prefixOwners.set(config.toolPrefix.toLowerCase(), name);
    configs.push(config);
  }
  return configs;
}

/**
 * Whether a person may use a server. Without a users list everyone signed in may; with one, the email
 * must be listed or its whole domain (after the "@") must be, so "@example.com" admits neither
 * "x@evil-example.com" nor "x@example.com.evil", nor a subdomain.
 */
export function userMayUse(config: UpstreamConfig, email: string | null | undefined): boolean {
  if (config.users === null) return true;
  if (!email) return false;
  const address = email.trim().toLowerCase();
  const at = address.lastIndexOf('@');
  if (at < 1) return false;
  const domain = address.slice(at);
  return config.users.some((allowed) => (allowed.startsWith('@') ? allowed === domain : allowed === address));
}

type EntryOutcome =
  | { ok: true; config: UpstreamConfig | null }
  | { ok: false; path: PropertyKey[]; message: string };

/** One entry: null when it is disabled, the first problem otherwise. */
function parseEntry(name: string, entry: unknown, schemas: EntrySchemas): EntryOutcome {
  const problem = (path: PropertyKey[], message: string): EntryOutcome => ({ ok: false, path, message });
  if (!isPlainObject(entry)) return problem([], 'must be an object with "command" (a server to start) or "url" (a server to reach)');
  if (entry.disabled !== undefined && typeof entry.disabled !== 'boolean') return problem(['disabled'], 'must be true or false');
  if (entry.disabled === true) return { ok: true, config: null };

  const hasCommand = entry.command !== undefined;
  const hasUrl = entry.url !== undefined;
  if (hasCommand && hasUrl) return problem([], 'has both "command" and "url"; keep "command" to start a local server or "url" to reach a remote one');
  if (!hasCommand && !hasUrl) return problem([], 'has neither "command" (a server to start) nor "url" (a server to reach)');
  const type = entry.type;
  if (type !== undefined) {
    if (type === 'sse') return problem(['type'], "the SSE transport is not supported; use the server's Streamable HTTP URL");
    if (type === 'stdio' && !hasCommand) return problem(['type'], 'is "stdio", which needs "command", but the entry has "url"');
    if (typeof type === 'string' && HTTP_TYPES.includes(type)) {
      if (!hasUrl) return problem(['type'], `is "${type}", which needs "url", but the entry has "command"`);
    } else if (type !== 'stdio') {
      return problem(['type'], 'must be "stdio", "http", "streamable-http" or "streamableHttp" (or be left out)');
    }
  }
  if (hasCommand && entry.perUserHeader !== undefined) {
    return problem(['perUserHeader'], 'is only for servers reached by "url": a server started by "command" receives no HTTP headers');
  }

  let options: z.infer<typeof schemas.options>;
  let transport: UpstreamTransport;
  let perUserHeader: PerUserHeader | undefined;
  if (hasCommand) {
    const parsed = schemas.stdio.safeParse(entry, { error: plainMessage });
    if (!parsed.success) return problem(parsed.error.issues[0].path, parsed.error.issues[0].message);
    const { command, args, env: variables, cwd } = parsed.data;
    transport = { kind: 'stdio', command, args, env: variables };
    if (cwd !== undefined) transport.cwd = cwd;
    options = parsed.data;
  } else {
    const parsed = schemas.http.safeParse(entry, { error: plainMessage });
    if (!parsed.success) return problem(parsed.error.issues[0].path, parsed.error.issues[0].message);
    const { url, headers } = parsed.data;
    transport = { kind: 'http', url, headers };
    perUserHeader = parsed.data.perUserHeader;
    const secretHeader = perUserHeader?.name.toLowerCase();
    const clash = Object.keys(headers).find((header) => header.toLowerCase() === secretHeader);
    if (clash !== undefined) {
      return problem(['perUserHeader', 'name'], `"${perUserHeader!.name}" is also set in "headers" (as "${clash}"); keep it in one place`);
    }
    options = parsed.data;
  }

  let toolPrefix = name;
  if (options.toolPrefix !== undefined) toolPrefix = options.toolPrefix;
  else if (!isToolPrefix(name)) {
    return problem(['toolPrefix'], `the entry's name is not a valid tool prefix (${TOOL_PREFIX_RULE}); set "toolPrefix"`);
  }

  const approve = options.approve ?? [];
  const approveAll = approve === '*' || approve.includes('*');
  const config: UpstreamConfig = {
    name,
    transport,
    // "*" among names still means every tool: the names add nothing then.
    approve: approveAll ? { all: true, tools: [] } : { all: false, tools: [...approve] },
    resumable: options.resumable ?? [],
    instant: options.instant ?? [],
    users: options.users ?? null,
    maxConcurrent: options.maxConcurrent,
    timeoutMs: options.timeoutMs,
    toolPrefix,
  };
  if (perUserHeader) config.perUserHeader = perUserHeader;
  return { ok: true, config };
}

/**
 * The two shapes of an entry. Only the client's own fields (command, args, env, cwd, url, header values)
 * expand ${NAME}; our options are taken as written. Built per file because expansion reads `env`.
 */
type EntrySchemas = ReturnType<typeof entrySchemas>;

function entrySchemas(env: Readonly<Record<string, string | undefined>>) {
  const expanded = z.string().transform((text, context) => {
    const outcome = expandVariables(text, env);
    if (typeof outcome === 'string') return outcome;
    context.addIssue({ code: 'custom', message: outcome.problem });
    return z.NEVER;
  });
  const nonEmpty = expanded.pipe(z.string().min(1, 'must not be empty'));
  const toolNames = z
    .array(z.string().min(1, 'must be a tool name, not empty'))
    .transform((names) => [...new Set(names)]);
  const email = z.email();
  const userEntry = z
    .string()
    .transform((value) => value.trim().toLowerCase())
    .refine((value) => (value.startsWith('@') ? email.safeParse(`x${value}`).success : email.safeParse(value).success), {
      error: (issue) => `${JSON.stringify(issue.input)} is neither an email address nor "@domain"`,
    });

  const options = z.object({
    approve: z.union([z.literal('*'), toolNames], { error: 'must be "*" (every tool) or a list of tool names' }).optional(),
    resumable: toolNames.optional(),
    instant: toolNames.optional(),
    users: z
      .array(userEntry)
      .min(1, 'must list at least one email or "@domain"; leave "users" out to admit every signed-in person')
      .optional(),
    maxConcurrent: z.number().int().min(1).max(1000).default(DEFAULT_MAX_CONCURRENT),
    timeoutMs: z.number().int().min(1000).max(24 * 60 * 60_000).default(DEFAULT_TIMEOUT_MS),
    toolPrefix: z.string().refine(isToolPrefix, `must be ${TOOL_PREFIX_RULE}`).optional(),
  });

  const stdio = z.looseObject({
    command: nonEmpty,
    args: z.array(expanded).default([]),
    env: z
      .record(
        z.string().regex(/^[^=\u0000]+$/, 'is not a usable variable name (empty, or holding "=")'),
        expanded,
      )
      .default({}),
    cwd: nonEmpty.optional(),
    ...options.shape,
  });

  const http = z.looseObject({
    url: expanded.pipe(z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })),
    headers: z
      .record(
        z.string().regex(HEADER_NAME, 'is not an HTTP header name'),
        expanded.pipe(z.string().refine((value) => !CONTROL_CHARACTERS.test(value), 'must not hold line breaks or other control characters')),
      )
      .default({}),
    perUserHeader: z
      .strictObject({
        name: z.string().regex(HEADER_NAME, "must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)"),
        template: z
          .string()
          .refine((template) => template.split('{secret}').length === 2, 'must contain "{secret}" exactly once, where the person\'s secret goes')
          .refine((template) => !CONTROL_CHARACTERS.test(template), 'must not hold line breaks or other control characters'),
      })
      .optional(),
    ...options.shape,
  });

  return { options, stdio, http };
}

/**
 * Replaces ${NAME} and ${NAME:-default} with the variable's value. A variable set to '' counts as unset,
 * as everywhere in our configuration, so ${NAME:-default} then takes the default and ${NAME} is refused.
 * Values are never scanned again, and never appear in a problem (they are often secrets).
 */
function expandVariables(text: string, env: Readonly<Record<string, string | undefined>>): string | { problem: string } {
  let result = '';
  let from = 0;
  for (;;) {
    const start = text.indexOf('${', from);
    if (start === -1) return result + text.slice(from);
    const end = text.indexOf('}', start + 2);
    if (end === -1) return { problem: 'has "${" without its closing "}"; write ${NAME} or ${NAME:-default}' };
    const reference = text.slice(start + 2, end);
    const separator = reference.indexOf(':-');
    const name = separator === -1 ? reference : reference.slice(0, separator);
    if (!VARIABLE_NAME.test(name)) {
      return { problem: `has "\${${reference}}", whose name is not a variable name (letters, digits and "_", not starting with a digit)` };
    }
    const value = env[name];
    let replacement: string;
    if (value !== undefined && value !== '') replacement = value;
    else if (separator !== -1) replacement = reference.slice(separator + 2);
    else return { problem: `uses \${${name}}, but the variable ${name} is ${value === '' ? 'empty' : 'not set'}` };
    result += text.slice(from, start) + replacement;
    from = end + 1;
  }
}

/** zod's messages in plain words, without echoing the value (an expanded field may hold a secret). */
function plainMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${describeType(issue.expected)} (it is ${describeValue(issue.input)})`;
    case 'too_small':
      return issue.origin === 'number' ? `must be at least ${issue.minimum}` : 'must not be empty';
    case 'too_big':
      return `must be at most ${issue.maximum}`;
    case 'unrecognized_keys':
      return `has unknown ${issue.keys.length === 1 ? 'key' : 'keys'} ${issue.keys.map((key) => JSON.stringify(key)).join(', ')}`;
    case 'invalid_key':
      return issue.issues[0]?.message;
    default:
      return undefined;
  }
}

function describeType(expected: string): string {
  const names: Record<string, string> = {
    string: 'a string',
    number: 'a number',
    int: 'a whole number',
    boolean: 'true or false',
    array: 'a list',
    object: 'an object',
    record: 'an object',
  };
  return names[expected] ?? expected;
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'number') return Number.isInteger(value) ? 'a whole number' : 'a number';
  if (typeof value === 'boolean') return 'true or false';
  return { string: 'a string', object: 'an object' }[typeof value as string] ?? typeof value;
}

function parseJson(text: string, fail: (message: string) => ServersFileError): unknown {
  if (text.trim() === '') throw fail('is empty; write { "mcpServers": {} } for no servers');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw fail(`is not valid JSON: ${jsonSyntaxProblem(text, (error as Error).message)}`);
  }
}

/**
 * JSON.parse's reason, with a line and column when it gives a position. Some of its messages quote the
 * text around the mistake; that quote is dropped, since the file may hold secrets.
 */
function jsonSyntaxProblem(text: string, message: string): string {
  const reason = message.replace(/, ".*" is not valid JSON$/s, '').replace(/ in JSON at position \d+.*$/s, '').replace(/ at position \d+.*$/s, '');
  const position = /at position (\d+)/.exec(message);
  if (!position) return reason;
  const before = text.slice(0, Number(position[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `${reason} at line ${line}, column ${column}`;
}

function readFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory, not a file';
  return (error as Error).message;
}

/** mcpServers.<entry>.<field path>, quoting names that would not read plainly (spaces, dots, quotes). */
function entryPath(entry: string, path: PropertyKey[]): string {
  let text = `mcpServers.${pathKey(entry)}`;
  for (const key of path) text += typeof key === 'number' ? `[${key}]` : `.${pathKey(String(key))}`;
  return text;
}

function pathKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

function isToolPrefix(prefix: string): boolean {
  return TOOL_PREFIX.test(prefix) && !prefix.includes('__');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Line breaks and other control characters written as escapes, so a message is one line. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
