import fc from 'fast-check';

/** What the generated requests aim at: real ids of the fuzzing user and of someone else. */
export interface FuzzTargets {
  mcpUrl: string;
  token: string;
  foreignToken: string;
  sessionId: string;
  batchSessionId: string;
  foreignSessionId: string;
  ownTaskId: string;
  foreignTaskId: string;
  /**
   * Tasks of a third user whose token no request carries, so that nothing may touch them: one
   * working, one waiting for the answer to its question `strangerInputId`.
   */
  strangerTaskId: string;
  strangerQuestionTaskId: string;
  strangerInputId: string;
}

export interface FuzzRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/** Text that can go in an HTTP header (fetch refuses the rest before anything is sent). */
const headerText = fc.stringMatching(/^[\x20-\x7e]{0,80}$/);

/**
 * Stands for a value nested that many levels deep. It is written into the body as text, since
 * building and writing such a value here would overflow this process's stack first.
 */
const deepMarker = '\u0000deep:';
const deepMarkerInJson = /"\\u0000deep:(\d+)\\u0000deep:"/g;

/** Strings that tend to break things: control and format characters, lone surrogates, huge ones. */
const awkwardString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 2, arbitrary: fc.constantFrom('', '\u0000', '\uFEFF', '\uD800', '\uDFFF', '\u202E', 'a\u0301', '𝟘', '\n{"forged":true}\n', '__proto__', 'constructor') },
  { weight: 1, arbitrary: fc.integer({ min: 10_000, max: 300_000 }).map((length) => 'x'.repeat(length)) },
);

/** Values of any shape: the wrong type for whatever field they replace. */
const anyValue = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 3, arbitrary: awkwardString },
  { weight: 2, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(-0), fc.constant(Number.MAX_SAFE_INTEGER + 2)) },
  { weight: 1, arbitrary: fc.integer({ min: 65, max: 100_000 }).map((depth) => `${deepMarker}${depth}${deepMarker}`) },
);

function toJson(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(deepMarkerInJson, (_, depth: string) => `${'[{"a":'.repeat(Number(depth) / 2)}0${'}]'.repeat(Number(depth) / 2)}`);
}

function baseMessages(targets: FuzzTargets): Array<Record<string, unknown>> {
  return [
    { jsonrpc: '2.0', id: 1, method: 'ping' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: 'x' } },
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' } } },
    { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'delay', arguments: { seconds: 0 }, task: { ttl: 60_000 }, _meta: { progressToken: 'p' } } },
    { jsonrpc: '2.0', id: 5, method: 'tasks/get', params: { taskId: targets.ownTaskId } },
    { jsonrpc: '2.0', id: 6, method: 'tasks/result', params: { taskId: targets.ownTaskId } },
    { jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { taskId: targets.foreignTaskId } },
    { jsonrpc: '2.0', id: 8, method: 'tasks/cancel', params: { taskId: targets.foreignTaskId } },
    { jsonrpc: '2.0', id: 9, method: 'tasks/list', params: { cursor: 'eyJub3QiOiJhIGN1cnNvciJ9' } },
    { jsonrpc: '2.0', id: 12, method: 'tasks/cancel', params: { taskId: targets.strangerTaskId } },
    { jsonrpc: '2.0', id: 13, method: 'tasks/result', params: { taskId: targets.strangerTaskId } },
    { jsonrpc: '2.0', id: 14, method: 'tasks/get', params: { taskId: targets.strangerQuestionTaskId } },
    { jsonrpc: '2.0', id: 15, method: 'tasks/cancel', params: { taskId: targets.strangerQuestionTaskId } },
    { jsonrpc: '2.0', id: 10, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'fuzz', version: '1' } } },
    { jsonrpc: '2.0', id: 11, method: 'logging/setLevel', params: { level: 'warning' } },
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'fuzz' } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    // Replayed and out-of-order responses: to requests never sent, and in the shape of answers to questions.
    { jsonrpc: '2.0', id: `input:${targets.ownTaskId}:replayed`, result: { action: 'accept', content: { answer: 'late' } } },
    { jsonrpc: '2.0', id: `input:${targets.strangerInputId}:1`, result: { action: 'accept', content: { answer: 'forged' } } },
    { jsonrpc: '2.0', id: `input:${targets.strangerInputId}:1`, result: { action: 'decline' } },
    { jsonrpc: '2.0', id: 'never-sent', error: { code: -32601, message: 'no' } },
    { jsonrpc: '2.0', id: 99, result: { task: { taskId: 'client-task', status: 'working' } } },
  ];
}

/** Every path into a message that a mutation may replace or remove. */
function pathsOf(value: unknown, prefix: string[] = []): string[][] {
  if (typeof value !== 'object' || value === null) return [prefix];
  return [prefix, ...Object.entries(value).flatMap(([key, child]) => pathsOf(child, [...prefix, key]))];
}

function mutate(message: Record<string, unknown>, path: string[], replacement: unknown, remove: boolean): unknown {
  if (path.length === 0) return replacement;
  const copy: Record<string, unknown> = structuredClone(message);
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
  const last = path.at(-1)!;
  if (remove) delete parent[last];
  else parent[last] = replacement;
  return copy;
}

/** A valid message with one field given a wrong value (or removed). */
function mutatedMessage(targets: FuzzTargets) {
  return fc
    .constantFrom(...baseMessages(targets))
    .chain((message) => fc.tuple(fc.constant(message), fc.constantFrom(...pathsOf(message)), anyValue, fc.boolean()))
    .map(([message, path, replacement, remove]) => mutate(message, path, replacement, remove && path.length > 0));
}

/** POST bodies: mutated messages, random JSON, broken JSON and batches. */
function bodies(targets: FuzzTargets): fc.Arbitrary<{ body: string; batch: boolean }> {
  const json = toJson;
  return fc.oneof(
    { weight: 10, arbitrary: mutatedMessage(targets).map((message) => ({ body: json(message), batch: false })) },
    { weight: 2, arbitrary: fc.constantFrom(...baseMessages(targets)).map((message) => ({ body: json(message), batch: false })) },
    { weight: 2, arbitrary: anyValue.map((value) => ({ body: json(value), batch: false })) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        mutatedMessage(targets).chain((message) => fc.nat().map((cut) => json(message).slice(0, cut % (json(message).length + 1)))),
        fc.constantFrom('', '{', '[', '{"jsonrpc":"2.0",', 'nul', '\uFEFF{}', '{"a":1}{"b":2}'),
      ).map((body) => ({ body, batch: false })),
    },
    { weight: 2, arbitrary: fc.array(mutatedMessage(targets), { maxLength: 60 }).map((messages) => ({ body: json(messages), batch: true })) },
  );
}

/** One request: mostly well-addressed POSTs with a bad body, sometimes bad headers or another method. */
export function fuzzRequest(targets: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  const badAuthorization = fc.oneof(headerText.map((text) => `Bearer ${text}`), headerText);
  const authorization = fc.oneof(
    { weight: 12, arbitrary: fc.constant(`Bearer ${targets.token}`) },
    { weight: 1, arbitrary: fc.constant(`Bearer ${targets.foreignToken}`) },
    { weight: 2, arbitrary: badAuthorization },
  );
  const session = (batch: boolean) =>
    fc.oneof(
      { weight: 12, arbitrary: fc.constant(batch ? targets.batchSessionId : targets.sessionId) },
      { weight: 1, arbitrary: fc.constant(targets.foreignSessionId) },
      { weight: 1, arbitrary: fc.uuid() },
      { weight: 1, arbitrary: headerText },
      { weight: 1, arbitrary: fc.constant(undefined) },
    );
  const optionalHeader = (usual: string | undefined, weight = 10) =>
    fc.oneof({ weight, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: headerText }, { weight: 1, arbitrary: fc.constant(undefined) });

  return fc.oneof(
    {
      weight: 12,
      arbitrary: bodies(targets).chain(({ body, batch }) =>
        fc.record({
          authorization,
          session: session(batch),
          contentType: optionalHeader('application/json'),
          accept: optionalHeader('application/json, text/event-stream'),
          version: optionalHeader(batch ? '2025-03-26' : '2025-11-25'),
          origin: fc.oneof({ weight: 10, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.webUrl() }),
        }).map((headers) => ({
          method: 'POST',
          body,
          headers: clean({
            Authorization: headers.authorization,
            'Mcp-Session-Id': headers.session,
            'Content-Type': headers.contentType,
            Accept: headers.accept,
            'MCP-Protocol-Version': headers.version,
            Origin: headers.origin,
          }),
        })),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .record({
          method: fc.constantFrom('GET', 'DELETE', 'PUT', 'PATCH'),
          // Never the other user's own token here: their DELETE of their own session would rightly end it.
          authorization: fc.oneof({ weight: 4, arbitrary: fc.constant(`Bearer ${targets.token}`) }, { weight: 1, arbitrary: badAuthorization }),
          session: fc.oneof(fc.constant(targets.foreignSessionId), fc.uuid(), headerText, fc.constant(undefined)),
          accept: optionalHeader('text/event-stream', 3),
          lastEventId: optionalHeader(undefined, 3),
        })
        .map((request) => ({
          method: request.method,
          // A GET may open the fuzzing session's own stream; nothing may end it (DELETE only hits others).
          headers: clean({
            Authorization: request.authorization,
            'Mcp-Session-Id': request.method === 'GET' && request.session === undefined ? targets.sessionId : request.session,
            Accept: request.accept,
            'Last-Event-ID': request.lastEventId,
          }),
        })),
    },
  );
}

const clean = (headers: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined));

/** What a reply may be: anything but a 5xx, and every body a well-formed JSON-RPC message or error. */
export function problemWithReply(method: string, status: number, contentType: string, text: string): string | undefined {
  if (status >= 500) return `status ${status}: ${text.slice(0, 300)}`;
  if (method === 'DELETE' && status === 200) return text === '' ? undefined : `DELETE answered 200 with a body: ${text.slice(0, 200)}`;
  if (contentType.startsWith('text/event-stream')) return status === 200 ? undefined : `an event stream with status ${status}`;
  if (status === 202) return text === '' ? undefined : `202 with a body: ${text.slice(0, 200)}`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `status ${status} with a body that is not JSON: ${text.slice(0, 200)}`;
  }
  const messages = Array.isArray(body) && status === 200 ? body : [body];
  for (const message of messages as Array<Record<string, any>>) {
    if (typeof message !== 'object' || message === null || message.jsonrpc !== '2.0') return `not JSON-RPC: ${text.slice(0, 200)}`;
    if (status >= 400 && !message.error) return `status ${status} without a JSON-RPC error: ${text.slice(0, 200)}`;
    if ('error' in message) {
      if (!Number.isInteger(message.error?.code) || typeof message.error?.message !== 'string' || message.error.message === '') {
        return `a malformed error: ${text.slice(0, 200)}`;
      }
    } else if (typeof message.result !== 'object' || message.result === null) {
      return `neither result nor error: ${text.slice(0, 200)}`;
    }
  }
  return undefined;
}

/** Sends one generated request and says what is wrong with the reply, if anything. */
export async function sendFuzzRequest(mcpUrl: string, request: FuzzRequest): Promise<string | undefined> {
  const response = await fetch(mcpUrl, { method: request.method, headers: request.headers, body: request.body, signal: AbortSignal.timeout(15_000) });
  const contentType = response.headers.get('content-type') ?? '';
  if (contentType.startsWith('text/event-stream')) {
    await response.body?.cancel();
    return problemWithReply(request.method, response.status, contentType, '');
  }
  const problem = problemWithReply(request.method, response.status, contentType, await response.text());
  return problem && `${problem}\n  for ${request.method} ${JSON.stringify(request.headers)} ${request.body?.slice(0, 300) ?? ''}`;
}
