import { z } from 'zod';

export type TaskSupport = 'forbidden' | 'optional' | 'required';

/** The severities of MCP logging (RFC 5424), least severe first. */
export const logLevels = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type LogLevel = (typeof logLevels)[number];

/** A content block or any other part of a CallToolResult, as the MCP schema defines it. */
export interface CallToolResult {
  content: Array<Record<string, unknown> & { type: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** What a tool gets besides its arguments. The same for a plain call and for a task. */
export interface ToolContext {
  /** Fires when the task is cancelled or expires (or, for a tool without tasks, its call is cancelled). */
  signal: AbortSignal;
  /** Reports progress; reaches the client as notifications/progress when it asked for progress. */
  progress(done: number, total?: number, message?: string): void;
  /** Sets the task's human-readable statusMessage. */
  status(message: string): void;
  /**
   * Publishes partial output while the tool runs (a line, or the next part of a growing result): kept
   * with the task (its latest 64 KB), shown live on the task's page, and sent to a client that asked for
   * progress as a progress message (the protocol has no partial result).
   */
  output(text: string): void;
  /** The task id when running as a task. */
  taskId?: string;
  /** The person the call runs for (the task's owner). */
  userId: string;
  /**
   * Asks the person behind the task a question (form-mode elicitation) and waits for the answer, from
   * their MCP client or the dashboard, whichever comes first. The key names the question within the
   * task: a tool that runs again after a restart gets the earlier answer instead of asking twice.
   */
  elicit(request: ElicitRequest, options: { key: string }): Promise<ElicitAnswer>;
  /**
   * Waits for a person to approve or deny a call the tool is about to make (a call of an upstream
   * server's tool), in the dashboard: never asked of the MCP client, since a client approving its own
   * call would defeat the purpose. Keyed like elicit, so a tool run again after a restart finds the
   * earlier approval instead of asking twice. A task that waits for approval when the server restarts
   * runs again, whatever its tool, and waits again: ask before doing anything that must not be done twice.
   */
  approve(request: ApprovalRequest, options: { key: string }): Promise<ApprovalAnswer>;
  /** Asks the client's model for a completion (sampling/createMessage); keyed like elicit. */
  createMessage(request: Record<string, unknown>, options: { key: string }): Promise<Record<string, unknown>>;
  /**
   * Sends the client a log message (notifications/message) if it asked for this level or a lower one
   * with logging/setLevel (until it asks, every level reaches it). Not kept with the task: a client
   * that is not listening then misses it.
   */
  log(level: LogLevel, data: unknown, logger?: string): void;
  /**
   * Closes the connection on which the client waits for this call's result, while the work goes on:
   * the client resumes the stream with Last-Event-ID and gets everything it missed (SSE polling, which
   * frees the connection of a long wait). A task-augmented call's client polls anyway: nothing happens.
   */
  closeStream(): void;
  /**
   * Set when a task runs again after a restart: where it had got to, and the upstream task doing its
   * work, when its tool noted one.
   */
  resumedFrom?: { progress: number | null; upstream?: { taskId: string; sessionId: string | null } };
  /**
   * Notes, with the task, the upstream task that does its work (and the upstream session it belongs to):
   * after a restart the tool runs again with it in `resumedFrom`, to follow it rather than call again.
   * Absent for a call that is not a task.
   */
  noteUpstreamTask?(taskId: string, sessionId: string | null): Promise<void>;
}

export interface ElicitRequest {
  message: string;
  requestedSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[] };
}

export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | number | boolean | string[]>;
  answeredBy: 'client' | 'dashboard';
  answeredByLabel: string | null;
}

/** The call a person is asked to approve: every argument in full, so that they see what would run. */
export interface ApprovalRequest {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
}

export interface ApprovalAnswer {
  approved: boolean;
  /** Who answered (their account's email), when known. */
  answeredByLabel: string | null;
}

/**
 * Hints about what a tool does to the world, for clients deciding whether to ask before calling it
 * (MCP ToolAnnotations). Hints, not guarantees: a client trusts them only from a server it trusts.
 */
export interface ToolAnnotations {
  /** A display name (an upstream's tools may carry it here rather than in `title`). */
  title?: string;
  /** It changes nothing in its environment. */
  readOnlyHint?: boolean;
  /** Its changes may destroy or overwrite something (meaningful when not read-only). */
  destructiveHint?: boolean;
  /** Calling it again with the same arguments has no further effect. */
  idempotentHint?: boolean;
  /** It reaches entities outside the server (a person, the web), not only a closed domain. */
  openWorldHint?: boolean;
}

export interface ToolDefinition<Schema extends z.ZodObject = z.ZodObject> {
  name: string;
  title?: string;
  description: string;
  inputSchema: Schema;
  /** The shape of its `structuredContent`: a result that does not fit it becomes an error result. */
  outputSchema?: z.ZodObject;
  annotations?: ToolAnnotations;
  /**
   * For a tool described in JSON Schema rather than zod (an upstream server's): its schemas as listed, and
   * its icons. Its `inputSchema` then only has to take an object: its source checks the arguments.
   */
  described?: { inputSchema: Record<string, unknown>; outputSchema?: Record<string, unknown>; icons?: unknown[] };
  taskSupport: TaskSupport;
  /**
   * The least ttl the tool's work needs (a person answering needs hours): a task of this tool is
   * granted at least this, within TASK_MAX_TTL_MS, whatever ttl the client asked for.
   */
  minTtlMs?: number;
  /**
   * The longest the tool's work may run for arguments it accepts. A plain call cannot ask for a ttl:
   * its task is granted this on top of the default, so that it cannot expire while its client waits.
   */
  maxRunMs?: number;
  /**
   * For a client of the 2026-07-28 tasks extension: the task is handed out only once the questions the
   * tool asks first are answered (multi round-trip requests before the task), e.g. a confirmation
   * before the work starts. Every other client meets those questions as it meets any other.
   */
  asksBeforeTask?: boolean;
  /** A resumable tool is run again after a restart instead of being failed. */
  resumable?: boolean;
  /** What a task of this tool that cannot resume says when a restart ended it, instead of the engine's words. */
  interruptedMessage?: string;
  /** A capability the calling client must have declared, for a tool that needs the client's help. */
  requiresClient?: 'sampling' | 'elicitation';
  run(args: z.infer<Schema>, ctx: ToolContext): Promise<CallToolResult>;
}

/** How long a question may wait for a person: a working day. */
export const personAnsweringTtlMs = 8 * 60 * 60 * 1000;

export function defineTool<Schema extends z.ZodObject>(tool: ToolDefinition<Schema>): ToolDefinition<Schema> {
  return tool;
}

/**
 * Why a task's signal fires when its work stops here but the task goes on elsewhere (this process is
 * stopping, or another instance took the task over): a tool leaves running what it started outside (an
 * upstream task), for whoever resumes it to follow.
 */
export class HandedOver extends Error {
  override name = 'HandedOver';
}

/** Whether a signal fired because the task was handed over; by name, as separately bundled routes hold separate classes. */
export const isHandedOver = (signal: AbortSignal) => signal.aborted && (signal.reason as Error | undefined)?.name === 'HandedOver';

/** A JSON-RPC error a tool may throw on purpose; tasks/result returns it verbatim. */
export class ToolProtocolError extends Error {
  override name = 'ToolProtocolError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export type ToolOutcome =
  | { kind: 'result'; result: CallToolResult }
  | { kind: 'error'; error: { code: number; message: string; data?: unknown } };

export const textResult = (text: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text }],
  ...(isError ? { isError: true } : {}),
});

/**
 * Runs a tool the way tools/call does: arguments that do not fit the schema and ordinary exceptions
 * become `isError` results the model can read; a ToolProtocolError becomes a JSON-RPC error.
 */
export async function executeTool(tool: ToolDefinition, rawArgs: unknown, ctx: ToolContext): Promise<ToolOutcome> {
  const parsed = tool.inputSchema.safeParse(rawArgs ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(arguments)'}: ${issue.message}`);
    return { kind: 'result', result: textResult(`Invalid arguments for tool ${tool.name}: ${problems.join('; ')}`, true) };
  }
  try {
    return { kind: 'result', result: withStructuredText(tool, await tool.run(parsed.data, withIncreasingProgress(ctx))) };
  } catch (error) {
    if (isToolProtocolError(error)) {
      return { kind: 'error', error: { code: error.code, message: error.message, ...(error.data !== undefined ? { data: error.data } : {}) } };
    }
    const message = error instanceof Error ? error.message : String(error);
    return { kind: 'result', result: textResult(`Tool ${tool.name} failed: ${message}`, true) };
  }
}

/**
 * A result with structured content, as the protocol wants it: fitting the tool's outputSchema (which
 * clients validate it against; one that does not fit is the tool's bug, reported as an error result
 * rather than sent), and also as serialized JSON in a text block, for clients that read only `content`.
 */
function withStructuredText(tool: ToolDefinition, result: CallToolResult): CallToolResult {
  const structured = result.structuredContent;
  if (structured === undefined || result.isError) return result;
  const fits = tool.outputSchema?.safeParse(structured);
  if (fits && !fits.success) {
    const problems = fits.error.issues.map((issue) => `${issue.path.join('.') || '(structuredContent)'}: ${issue.message}`);
    return textResult(`Tool ${tool.name} returned a result that does not fit its outputSchema: ${problems.join('; ')}`, true);
  }
  const text = JSON.stringify(structured);
  if (result.content.some((block) => block.type === 'text' && block.text === text)) return result;
  return { ...result, content: [...result.content, { type: 'text', text }] };
}

/** A progress message carries at most this much of an output. */
const outputMessageChars = 1000;

/**
 * Progress must increase with each notification: a report that does not is dropped. Partial output is
 * kept by the context and reported as progress that moves by a step too small to show, with the output
 * (its last line, when it has several) as the message.
 */
function withIncreasingProgress(ctx: ToolContext): ToolContext {
  let last = ctx.resumedFrom?.progress ?? Number.NEGATIVE_INFINITY;
  let lastTotal: number | undefined;
  const progress = (done: number, total?: number, message?: string) => {
    if (!(done > last)) return;
    last = done;
    if (total !== undefined) lastTotal = total;
    ctx.progress(done, total, message);
  };
  return {
    ...ctx,
    progress,
    output(text) {
      if (typeof text !== 'string' || text.length === 0) return;
      ctx.output(text);
      const line = text.replace(/\n+$/, '').split('\n').at(-1) ?? '';
      progress((Number.isFinite(last) ? last : 0) + (lastTotal ?? 1) * 1e-6, lastTotal, line.slice(-outputMessageChars));
    },
  };
}

/** Checked by shape, not instanceof: separately bundled routes may hold separate copies of this class. */
function isToolProtocolError(error: unknown): error is ToolProtocolError {
  return error instanceof Error && error.name === 'ToolProtocolError' && typeof (error as ToolProtocolError).code === 'number';
}

/** The tool as tools/list describes it; `execution` only to a session whose protocol version has tasks. */
export function describeTool(tool: ToolDefinition, withTasks: boolean): ToolListing {
  // Converting the schemas is most of what a tools/list costs, and a definition never changes: once each.
  const cached = listings.get(tool);
  const listed = withTasks ? cached?.withTasks : cached?.withoutTasks;
  if (listed) return listed;
  const made = listingOf(tool, withTasks);
  listings.set(tool, { ...cached, [withTasks ? 'withTasks' : 'withoutTasks']: made });
  return made;
}

/** A tool as tools/list gives it; shared between calls, so never changed by them. */
export type ToolListing = Readonly<ReturnType<typeof listingOf>>;

const listings = new WeakMap<ToolDefinition, { withTasks?: ToolListing; withoutTasks?: ToolListing }>();

function listingOf(tool: ToolDefinition, withTasks: boolean) {
  return {
    name: tool.name,
    ...(tool.title ? { title: tool.title } : {}),
    description: tool.description,
    // With its $schema: 2020-12 is the default dialect of MCP 2025-11-25, and saying so costs nothing.
    inputSchema: tool.described?.inputSchema ?? z.toJSONSchema(tool.inputSchema, { io: 'input' }),
    ...(tool.outputSchema ? { outputSchema: outputSchemaOf(tool.outputSchema) } : {}),
    ...(tool.described?.outputSchema ? { outputSchema: tool.described.outputSchema } : {}),
    ...(tool.described?.icons ? { icons: tool.described.icons } : {}),
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
    ...(withTasks && tool.taskSupport !== 'forbidden' ? { execution: { taskSupport: tool.taskSupport } } : {}),
  };
}

/**
 * The JSON Schema of a tool's structured content, without `$schema`: clients compile it to validate
 * results, and common validators (the official SDK's Ajv among them) refuse a 2020-12 `$schema` they
 * were not set up for, though 2020-12 is what MCP reads a schema without one as.
 */
function outputSchemaOf(schema: z.ZodObject): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'output' });
  return rest;
}
