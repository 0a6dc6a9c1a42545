import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadServersFile, parseServersFile, ServersFileError, type UpstreamConfig, userMayUse } from '@/lib/upstreams/config';

const FILE = '/etc/mcp/servers.json';

function parse(servers: unknown, env: Readonly<Record<string, string | undefined>> = {}): UpstreamConfig[] {
  return parseServersFile(JSON.stringify({ mcpServers: servers }), FILE, env);
}

function one(entry: unknown, env: Readonly<Record<string, string | undefined>> = {}): UpstreamConfig {
  const configs = parse({ server: entry }, env);
  expect(configs).toHaveLength(1);
  return configs[0];
}

/** The error a bad file gives; every one is a ServersFileError on one line that starts by naming the file. */
function failure(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ServersFileError);
    const message = (error as Error).message;
    expect(message).not.toMatch(/[\r\n\u2028\u2029]/);
    expect(message.startsWith('MCP_SERVERS_FILE ')).toBe(true);
    return message;
  }
  throw new Error('expected the servers file to be refused');
}

const refusal = (servers: unknown, env: Readonly<Record<string, string | undefined>> = {}) => failure(() => parse(servers, env));

describe('the servers file', () => {
  it('reads a stdio entry as Claude Desktop writes it, with our defaults', () => {
    expect(one({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'], env: { DEBUG: '1' } })).toEqual({
      name: 'server',
      transport: { kind: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'], env: { DEBUG: '1' } },
      approve: { all: false, tools: [] },
      resumable: [],
      instant: [],
      users: null,
      maxConcurrent: 8,
      timeoutMs: 600_000,
      toolPrefix: 'server',
    });
    expect(one({ command: 'node', cwd: '/srv/tool' }).transport).toEqual({ kind: 'stdio', command: 'node', args: [], env: {}, cwd: '/srv/tool' });
    expect(one({ type: 'stdio', command: 'node' }).transport.kind).toBe('stdio');
  });

  it('reads an http entry with or without a type', () => {
    expect(one({ url: 'https://mcp.example.com/mcp', headers: { 'X-Team': 'blue' } }).transport).toEqual({
      kind: 'http',
      url: 'https://mcp.example.com/mcp',
      headers: { 'X-Team': 'blue' },
    });
    for (const type of ['http', 'streamable-http', 'streamableHttp']) {
      expect(one({ type, url: 'http://127.0.0.1:9000/mcp' }).transport).toEqual({ kind: 'http', url: 'http://127.0.0.1:9000/mcp', headers: {} });
    }
  });

  it('accepts an empty mcpServers, ignores other top-level keys and a byte order mark', () => {
    expect(parseServersFile('{"mcpServers":{}}', FILE, {})).toEqual([]);
    expect(parseServersFile('\uFEFF{"globalShortcut":"Ctrl+Space","mcpServers":{}}', FILE, {})).toEqual([]);
  });

  it('keeps entries in file order and leaves disabled ones out', () => {
    const configs = parse({
      b: { command: 'b' },
      off: { command: '${NOT_SET}', disabled: true },
      a: { url: 'https://a.example/mcp', disabled: false },
    });
    expect(configs.map((config) => config.name)).toEqual(['b', 'a']);
    expect(refusal({ a: { command: 'a', disabled: 'yes' } })).toBe(`MCP_SERVERS_FILE ${FILE}: mcpServers.a.disabled: must be true or false`);
  });

  it("ignores other clients' keys in an entry", () => {
    const config = one({ command: 'x', autoApprove: ['read'], alwaysAllow: ['read'], timeout: 60, description: 'a tool', transportType: 'stdio' });
    expect(config).not.toHaveProperty('autoApprove');
    expect(config).not.toHaveProperty('timeout');
    expect(config.timeoutMs).toBe(600_000);
  });

  it('reads our own options', () => {
    const config = one({
      url: 'https://mcp.example.com/mcp',
      approve: ['delete_repo', 'delete_repo', 'push'],
      resumable: ['search'],
      instant: ['ping'],
      users: ['Alice@Example.com', '@Team.Example.org'],
      maxConcurrent: 2,
      timeoutMs: 1000,
      toolPrefix: 'gh',
      perUserHeader: { name: 'Authorization', template: 'Bearer {secret}' },
    });
    expect(config).toMatchObject({
      approve: { all: false, tools: ['delete_repo', 'push'] },
      resumable: ['search'],
      instant: ['ping'],
      users: ['alice@example.com', '@team.example.org'],
      maxConcurrent: 2,
      timeoutMs: 1000,
      toolPrefix: 'gh',
      perUserHeader: { name: 'Authorization', template: 'Bearer {secret}' },
    });
    expect(one({ command: 'x', approve: '*' }).approve).toEqual({ all: true, tools: [] });
    expect(one({ command: 'x', approve: ['*'] }).approve).toEqual({ all: true, tools: [] });
    expect(one({ command: 'x', approve: ['push', '*'] }).approve).toEqual({ all: true, tools: [] });
    expect(one({ command: 'x', maxConcurrent: 1000, timeoutMs: 86_400_000 })).toMatchObject({ maxConcurrent: 1000, timeoutMs: 86_400_000 });
  });
});

describe('variables in the servers file', () => {
  const env = { TOKEN: 's3cret-value', HOST: 'mcp.example.com', BIN: '/usr/bin/node', EMPTY: '' };

  it('expands ${NAME} and ${NAME:-default} in command, args, env, cwd, url and header values', () => {
    const stdio = one(
      { command: '${BIN}', args: ['--token=${TOKEN}', '${PORT:-8080}', 'plain $HOME $'], env: { API_KEY: '${TOKEN}' }, cwd: '${DIR:-/srv}' },
      env,
    );
    expect(stdio.transport).toEqual({
      kind: 'stdio',
      command: '/usr/bin/node',
      args: ['--token=s3cret-value', '8080', 'plain $HOME $'],
      env: { API_KEY: 's3cret-value' },
      cwd: '/srv',
    });
    const http = one({ url: 'https://${HOST}/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } }, env);
    expect(http.transport).toEqual({ kind: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer s3cret-value' } });
  });

  it('reads process.env when no environment is given', () => {
    process.env.UPSTREAM_CONFIG_TEST_VALUE = 'from-process';
    try {
      const [config] = parseServersFile('{"mcpServers":{"a":{"command":"${UPSTREAM_CONFIG_TEST_VALUE}"}}}', FILE);
      expect(config.transport).toMatchObject({ command: 'from-process' });
    } finally {
      delete process.env.UPSTREAM_CONFIG_TEST_VALUE;
    }
  });

  it('does not expand a value again, nor our own options', () => {
    expect(one({ command: 'x', args: ['${A}'] }, { A: '${TOKEN}', TOKEN: 'no' }).transport).toMatchObject({ args: ['${TOKEN}'] });
    expect(one({ command: 'x', toolPrefix: 'p', instant: ['${TOKEN}'] }, env).instant).toEqual(['${TOKEN}']);
    const config = one({ url: 'https://a.example/mcp', perUserHeader: { name: 'X-Key', template: '${TOKEN}{secret}' } }, env);
    expect(config.perUserHeader?.template).toBe('${TOKEN}{secret}');
  });

  it('takes the default for an empty variable and refuses ${NAME} when it is empty', () => {
    expect(one({ command: 'x', args: ['${EMPTY:-fallback}', '${EMPTY:-}'] }, env).transport).toMatchObject({ args: ['fallback', ''] });
    expect(refusal({ srv: { command: 'x', args: ['${EMPTY}'] } }, env)).toBe(
      `MCP_SERVERS_FILE ${FILE}: mcpServers.srv.args[0]: uses \${EMPTY}, but the variable EMPTY is empty`,
    );
  });

  it('refuses a variable that is not set, naming entry, field and variable', () => {
    expect(refusal({ github: { command: 'x', env: { GITHUB_TOKEN: '${GITHUB_PAT}' } } }, env)).toBe(
      `MCP_SERVERS_FILE ${FILE}: mcpServers.github.env.GITHUB_TOKEN: uses \${GITHUB_PAT}, but the variable GITHUB_PAT is not set`,
    );
    expect(refusal({ remote: { url: 'https://${MISSING_HOST}/mcp' } }, env)).toMatch(/mcpServers\.remote\.url: uses \$\{MISSING_HOST\}/);
    expect(refusal({ remote: { url: 'https://a.example', headers: { Authorization: 'Bearer ${NOPE}' } } }, env)).toMatch(
      /mcpServers\.remote\.headers\.Authorization: uses \$\{NOPE\}, but the variable NOPE is not set/,
    );
    expect(refusal({ local: { command: '${NOPE}' } }, env)).toMatch(/mcpServers\.local\.command: /);
    expect(refusal({ local: { command: 'x', cwd: '${NOPE}' } }, env)).toMatch(/mcpServers\.local\.cwd: /);
  });

  it('refuses a malformed reference', () => {
    expect(refusal({ a: { command: 'x', args: ['${TOKEN'] } }, env)).toMatch(/mcpServers\.a\.args\[0\]: has "\$\{" without its closing "\}"/);
    expect(refusal({ a: { command: 'x', args: ['${GITHUB TOKEN}'] } }, env)).toMatch(/mcpServers\.a\.args\[0\]: .*not a variable name/);
  });

  it('never prints the value of a variable', () => {
    const secret = 'top-secret-token';
    const messages = [
      refusal({ a: { url: '${SECRET}' } }, { SECRET: secret }),
      refusal({ a: { url: 'https://a.example', headers: { 'X-Key': 'x\n${SECRET}' } } }, { SECRET: secret }),
      refusal({ a: { command: '${EMPTY:-}' } }, { SECRET: secret }),
    ];
    expect(messages[0]).toBe(`MCP_SERVERS_FILE ${FILE}: mcpServers.a.url: must be an http:// or https:// URL`);
    expect(messages[1]).toMatch(/mcpServers\.a\.headers\.X-Key: must not hold line breaks/);
    expect(messages[2]).toMatch(/mcpServers\.a\.command: must not be empty/);
    for (const message of messages) expect(message).not.toContain(secret);
  });
});

describe('a bad servers file is refused in one line naming file, entry and field', () => {
  it('says when the text is not JSON, with a position when JSON.parse gives one', () => {
    expect(failure(() => parseServersFile('{\n  "mcpServers": {\n    x: 1 }\n}', FILE))).toMatch(
      new RegExp(`^MCP_SERVERS_FILE ${FILE}: is not valid JSON: .* at line 3, column 5$`),
    );
    expect(failure(() => parseServersFile('{"mcpServers": {"a": {"env": {"K": "sk-live-123"}} ]', FILE))).not.toContain('sk-live-123');
    expect(failure(() => parseServersFile('{"mcpServers": ', FILE))).toMatch(/is not valid JSON: Unexpected end of JSON input/);
    expect(failure(() => parseServersFile('  \n', FILE))).toBe(`MCP_SERVERS_FILE ${FILE}: is empty; write { "mcpServers": {} } for no servers`);
  });

  it('needs an object with an mcpServers object', () => {
    expect(failure(() => parseServersFile('[]', FILE))).toMatch(/: must hold a JSON object/);
    expect(failure(() => parseServersFile('{"servers": {}}', FILE))).toMatch(/has no "mcpServers" object/);
    expect(failure(() => parseServersFile('{"mcpServers": []}', FILE))).toBe(
      `MCP_SERVERS_FILE ${FILE}: mcpServers: must be an object whose keys name the servers`,
    );
    expect(refusal({ a: 'npx server' })).toMatch(/mcpServers\.a: must be an object/);
  });

  it('needs command or url, not both, and a type that agrees', () => {
    expect(refusal({ a: { args: ['x'] } })).toBe(`MCP_SERVERS_FILE ${FILE}: mcpServers.a: has neither "command" (a server to start) nor "url" (a server to reach)`);
    expect(refusal({ a: { command: 'x', url: 'https://a.example' } })).toMatch(/mcpServers\.a: has both "command" and "url"/);
    expect(refusal({ a: { type: 'stdio', url: 'https://a.example' } })).toMatch(/mcpServers\.a\.type: is "stdio", which needs "command"/);
    expect(refusal({ a: { type: 'http', command: 'x' } })).toMatch(/mcpServers\.a\.type: is "http", which needs "url"/);
    expect(refusal({ a: { type: 'websocket', url: 'https://a.example' } })).toMatch(/mcpServers\.a\.type: must be "stdio", "http"/);
    expect(refusal({ a: { type: 7, command: 'x' } })).toMatch(/mcpServers\.a\.type: must be/);
  });

  it('refuses the SSE transport', () => {
    expect(refusal({ old: { type: 'sse', url: 'https://a.example/sse' } })).toBe(
      `MCP_SERVERS_FILE ${FILE}: mcpServers.old.type: the SSE transport is not supported; use the server's Streamable HTTP URL`,
    );
  });

  it('refuses wrong types in the fields of a server', () => {
    expect(refusal({ a: { command: '' } })).toBe(`MCP_SERVERS_FILE ${FILE}: mcpServers.a.command: must not be empty`);
    expect(refusal({ a: { command: 5 } })).toBe(`MCP_SERVERS_FILE ${FILE}: mcpServers.a.command: must be a string (it is a whole number)`);
    expect(refusal({ a: { command: 'x', args: 'one two' } })).toBe(`MCP_SERVERS_FILE ${FILE}: mcpServers.a.args: must be a list (it is a string)`);
    expect(refusal({ a: { command: 'x', args: ['ok', 3] } })).toMatch(/mcpServers\.a\.args\[1\]: must be a string/);
    expect(refusal({ a: { command: 'x', env: { PORT: 8080 } } })).toMatch(/mcpServers\.a\.env\.PORT: must be a string \(it is a whole number\)/);
    expect(refusal({ a: { command: 'x', env: ['A=1'] } })).toMatch(/mcpServers\.a\.env: must be an object/);
    expect(refusal({ a: { command: 'x', cwd: '' } })).toMatch(/mcpServers\.a\.cwd: must not be empty/);
    expect(refusal({ a: { url: 'ftp://a.example' } })).toMatch(/mcpServers\.a\.url: must be an http:\/\/ or https:\/\/ URL/);
    expect(refusal({ a: { url: 'not a url' } })).toMatch(/mcpServers\.a\.url: must be an http/);
    expect(refusal({ a: { url: 'https://a.example', headers: { 'Bad Header': 'x' } } })).toMatch(/mcpServers\.a\.headers\."Bad Header": is not an HTTP header name/);
    expect(refusal({ a: { url: 'https://a.example', headers: { 'X-N': 1 } } })).toMatch(/mcpServers\.a\.headers\.X-N: must be a string/);
  });

  it('refuses wrong types in our own options', () => {
    expect(refusal({ a: { command: 'x', approve: 'all' } })).toMatch(/mcpServers\.a\.approve: must be "\*" \(every tool\) or a list of tool names/);
    expect(refusal({ a: { command: 'x', approve: true } })).toMatch(/mcpServers\.a\.approve: /);
    expect(refusal({ a: { command: 'x', resumable: 'search' } })).toMatch(/mcpServers\.a\.resumable: must be a list/);
    expect(refusal({ a: { command: 'x', instant: [''] } })).toMatch(/mcpServers\.a\.instant\[0\]: must be a tool name, not empty/);
    expect(refusal({ a: { command: 'x', users: [] } })).toMatch(/mcpServers\.a\.users: must list at least one email or "@domain"/);
    expect(refusal({ a: { command: 'x', users: ['bob'] } })).toMatch(/mcpServers\.a\.users\[0\]: "bob" is neither an email address nor "@domain"/);
    expect(refusal({ a: { command: 'x', users: ['@'] } })).toMatch(/mcpServers\.a\.users\[0\]: /);
    expect(refusal({ a: { command: 'x', users: 'alice@example.com' } })).toMatch(/mcpServers\.a\.users: must be a list/);
    expect(refusal({ a: { command: 'x', maxConcurrent: 0 } })).toBe(`MCP_SERVERS_FILE ${FILE}: mcpServers.a.maxConcurrent: must be at least 1`);
    expect(refusal({ a: { command: 'x', maxConcurrent: 1001 } })).toMatch(/mcpServers\.a\.maxConcurrent: must be at most 1000/);
    expect(refusal({ a: { command: 'x', maxConcurrent: 2.5 } })).toMatch(/mcpServers\.a\.maxConcurrent: must be a whole number/);
    expect(refusal({ a: { command: 'x', maxConcurrent: '4' } })).toMatch(/mcpServers\.a\.maxConcurrent: must be a number \(it is a string\)/);
    expect(refusal({ a: { command: 'x', timeoutMs: 999 } })).toMatch(/mcpServers\.a\.timeoutMs: must be at least 1000/);
    expect(refusal({ a: { command: 'x', timeoutMs: 86_400_001 } })).toMatch(/mcpServers\.a\.timeoutMs: must be at most 86400000/);
  });

  it('checks the tool prefix, and says to set one when the name does not fit', () => {
    expect(one({ command: 'x', toolPrefix: 'Git.Hub-2_x' }).toolPrefix).toBe('Git.Hub-2_x');
    expect(parse({ 'my server': { command: 'x', toolPrefix: 'mine' } })[0]).toMatchObject({ name: 'my server', toolPrefix: 'mine' });
    expect(refusal({ a: { command: 'x', toolPrefix: 'a__b' } })).toMatch(/mcpServers\.a\.toolPrefix: must be 1 to 64 letters/);
    expect(refusal({ a: { command: 'x', toolPrefix: 'a b' } })).toMatch(/mcpServers\.a\.toolPrefix: must be/);
    expect(refusal({ a: { command: 'x', toolPrefix: 'p'.repeat(65) } })).toMatch(/mcpServers\.a\.toolPrefix: must be/);
    expect(refusal({ a: { command: 'x', toolPrefix: '' } })).toMatch(/mcpServers\.a\.toolPrefix: must be/);
    expect(refusal({ 'my server': { command: 'x' } })).toBe(
      `MCP_SERVERS_FILE ${FILE}: mcpServers."my server".toolPrefix: the entry's name is not a valid tool prefix ` +
        '(1 to 64 letters, digits, "_", "." or "-", without "__"); set "toolPrefix"',
    );
    expect(refusal({ my__server: { command: 'x' } })).toMatch(/mcpServers\.my__server\.toolPrefix: .*set "toolPrefix"/);
  });

  it('refuses two entries with the same tool prefix, compared without case, naming both', () => {
    expect(refusal({ GitHub: { command: 'x' }, other: { url: 'https://a.example', toolPrefix: 'github' } })).toBe(
      `MCP_SERVERS_FILE ${FILE}: mcpServers.other.toolPrefix: tool prefix "github" is also the tool prefix of mcpServers.GitHub ` +
        '(compared without case); give one of them another "toolPrefix"',
    );
    expect(parse({ a: { command: 'x' }, b: { command: 'x', toolPrefix: 'a', disabled: true } })).toHaveLength(1);
  });

  it('checks the per-user header', () => {
    const http = { url: 'https://a.example/mcp' };
    expect(refusal({ a: { command: 'x', perUserHeader: { name: 'Authorization', template: 'Bearer {secret}' } } })).toMatch(
      /mcpServers\.a\.perUserHeader: is only for servers reached by "url"/,
    );
    expect(refusal({ a: { ...http, perUserHeader: { name: 'Bad Name', template: '{secret}' } } })).toMatch(
      /mcpServers\.a\.perUserHeader\.name: must be an HTTP header name/,
    );
    expect(refusal({ a: { ...http, perUserHeader: { name: 'X-Key:', template: '{secret}' } } })).toMatch(/perUserHeader\.name: /);
    expect(refusal({ a: { ...http, perUserHeader: { name: 'Authorization', template: 'Bearer token' } } })).toMatch(
      /mcpServers\.a\.perUserHeader\.template: must contain "\{secret\}" exactly once/,
    );
    expect(refusal({ a: { ...http, perUserHeader: { name: 'Authorization', template: '{secret}{secret}' } } })).toMatch(
      /perUserHeader\.template: must contain "\{secret\}" exactly once/,
    );
    expect(refusal({ a: { ...http, perUserHeader: { name: 'X-Key', template: '{secret}\r\nX-Other: 1' } } })).toMatch(
      /perUserHeader\.template: must not hold line breaks/,
    );
    expect(refusal({ a: { ...http, perUserHeader: { name: 'X-Key' } } })).toMatch(/mcpServers\.a\.perUserHeader\.template: must be a string/);
    expect(refusal({ a: { ...http, perUserHeader: { name: 'X-Key', template: '{secret}', prefix: 'x' } } })).toMatch(
      /mcpServers\.a\.perUserHeader: has unknown key "prefix"/,
    );
    expect(refusal({ a: { ...http, perUserHeader: 'Authorization' } })).toMatch(/mcpServers\.a\.perUserHeader: must be an object/);
    expect(
      refusal({ a: { ...http, headers: { authorization: 'Bearer shared' }, perUserHeader: { name: 'Authorization', template: 'Bearer {secret}' } } }),
    ).toMatch(/mcpServers\.a\.perUserHeader\.name: "Authorization" is also set in "headers" \(as "authorization"\)/);
  });

  it('reports the first problem of the first bad entry', () => {
    const message = refusal({ good: { command: 'x' }, bad: { command: 'x', args: 1, maxConcurrent: 0 }, worse: 5 });
    expect(message).toBe(`MCP_SERVERS_FILE ${FILE}: mcpServers.bad.args: must be a list (it is a whole number)`);
  });

  it('keeps the message on one line whatever the names hold', () => {
    const message = failure(() => parseServersFile(JSON.stringify({ mcpServers: { 'line\nbreak': { command: 'x' } } }), 'dir\n/servers.json', {}));
    expect(message).toContain('mcpServers."line\\nbreak".toolPrefix');
    expect(message).toContain('dir\\u000a/servers.json');
  });
});

describe('loading the servers file', () => {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'upstream-config-'));
  afterAll(() => fs.rmSync(directory, { recursive: true, force: true }));

  it('reads a real file', () => {
    const file = path.join(directory, 'servers.json');
    fs.writeFileSync(
      file,
      JSON.stringify({ mcpServers: { everything: { command: 'npx', args: ['server-everything'], env: { KEY: '${KEY}' } }, remote: { url: 'https://a.example/mcp' } } }),
    );
    const configs = loadServersFile(file, { KEY: 'k' });
    expect(configs.map((config) => config.name)).toEqual(['everything', 'remote']);
    expect(configs[0].transport).toEqual({ kind: 'stdio', command: 'npx', args: ['server-everything'], env: { KEY: 'k' } });
  });

  it('names the file in its errors', () => {
    const file = path.join(directory, 'bad.json');
    fs.writeFileSync(file, '{"mcpServers": {"a": {"type": "sse", "url": "https://a.example/sse"}}}');
    expect(failure(() => loadServersFile(file, {}))).toBe(
      `MCP_SERVERS_FILE ${file}: mcpServers.a.type: the SSE transport is not supported; use the server's Streamable HTTP URL`,
    );
    const notJson = path.join(directory, 'not.json');
    fs.writeFileSync(notJson, 'mcpServers:\n  a: {}\n');
    expect(failure(() => loadServersFile(notJson, {}))).toMatch(new RegExp(`^MCP_SERVERS_FILE ${notJson}: is not valid JSON`));
  });

  it('says when the file is missing or is a directory', () => {
    const missing = path.join(directory, 'missing.json');
    expect(failure(() => loadServersFile(missing, {}))).toBe(`MCP_SERVERS_FILE ${missing}: cannot be read: no such file`);
    expect(failure(() => loadServersFile(directory, {}))).toBe(`MCP_SERVERS_FILE ${directory}: cannot be read: it is a directory, not a file`);
  });
});

describe('who may use a server', () => {
  const withUsers = (users: string[] | null) => ({ ...one({ command: 'x', ...(users ? { users } : {}) }) });

  it('admits every signed-in person without a users list', () => {
    const open = withUsers(null);
    expect(userMayUse(open, 'anyone@anywhere.example')).toBe(true);
    expect(userMayUse(open, null)).toBe(true);
    expect(userMayUse(open, undefined)).toBe(true);
  });

  it('matches listed emails without case', () => {
    const config = withUsers(['Alice@Example.com']);
    expect(userMayUse(config, 'alice@example.com')).toBe(true);
    expect(userMayUse(config, 'ALICE@EXAMPLE.COM')).toBe(true);
    expect(userMayUse(config, 'bob@example.com')).toBe(false);
    expect(userMayUse(config, 'malice@example.com')).toBe(false);
    expect(userMayUse(config, null)).toBe(false);
    expect(userMayUse(config, '')).toBe(false);
  });

  it('matches a whole domain, never a part of one', () => {
    const config = withUsers(['@Example.com']);
    expect(userMayUse(config, 'x@example.com')).toBe(true);
    expect(userMayUse(config, 'X@EXAMPLE.COM')).toBe(true);
    expect(userMayUse(config, 'x@evil-example.com')).toBe(false);
    expect(userMayUse(config, 'x@example.com.evil')).toBe(false);
    expect(userMayUse(config, 'x@sub.example.com')).toBe(false);
    expect(userMayUse(config, '@example.com')).toBe(false);
    expect(userMayUse(config, 'example.com')).toBe(false);
    expect(userMayUse(config, undefined)).toBe(false);
  });
});
