import { describe, expect, it } from 'vitest';
import { jsonBodyText, sharedListings } from '@/lib/mcp/core/json-text';

const listing = (name: string) => ({ name, description: `The "${name}" tool\n`, inputSchema: { type: 'object', properties: { n: { type: 'number' } } }, title: undefined });

describe('a reply body with shared tool listings', () => {
  it('reads back exactly as JSON.stringify writes it, undefined members left out', () => {
    const tools = sharedListings([listing('a'), listing('ü')]);
    const body = { jsonrpc: '2.0', id: 'req "1"', result: { tools, nextCursor: undefined, ttlMs: 300000, _meta: { k: [1, null] }, skip: () => 1 } };
    const text = jsonBodyText(body);
    expect(text).toBe(JSON.stringify(body));
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(body)));
  });

  it('writes a listing as it was when first written, since listings never change', () => {
    const shared = listing('once');
    const first = jsonBodyText({ jsonrpc: '2.0', id: 1, result: { tools: sharedListings([shared]) } });
    shared.description = 'changed';
    const again = jsonBodyText({ jsonrpc: '2.0', id: 2, result: { tools: sharedListings([shared]) } });
    expect(JSON.parse(again).result.tools[0].description).toBe('The "once" tool\n');
    expect(JSON.parse(first).id).toBe(1);
    expect(JSON.parse(again).id).toBe(2);
  });

  it('serializes every other body as JSON.stringify does', () => {
    const unmarked = { jsonrpc: '2.0', id: 3, result: { tools: [listing('b')] } };
    const text = jsonBodyText(unmarked);
    unmarked.result.tools[0].description = 'changed';
    expect(jsonBodyText(unmarked)).not.toBe(text);
    for (const body of [null, [], [{ result: { tools: 1 } }], { result: null }, { error: { code: -1, message: 'x' } }, 'text']) {
      expect(jsonBodyText(body)).toBe(JSON.stringify(body));
    }
  });
});
