/**
 * A reply's body as text, with the tool listings of a tools/list result written from JSON text made once
 * per listing. A listing is shared by every tools/list and never changes (lib/tools/define.ts caches
 * it), yet serializing the listings again for each request was about a third of a tools/list's CPU.
 */

const listingTexts = new WeakMap<object, string>();
const sharedLists = new WeakSet<object>();

/** Marks a result's `tools` as a list of shared, never-changed listings, whose text may be made once. */
export function sharedListings<T extends object>(list: T[]): T[] {
  sharedLists.add(list);
  return list;
}

/** The text of a reply's JSON body: what JSON.stringify writes, however it is made. */
export function jsonBodyText(json: unknown): string {
  const result = typeof json === 'object' && json !== null ? (json as { result?: unknown }).result : undefined;
  const tools = typeof result === 'object' && result !== null ? (result as { tools?: unknown }).tools : undefined;
  if (typeof tools !== 'object' || tools === null || !sharedLists.has(tools)) return JSON.stringify(json);
  return objectText(json as Record<string, unknown>, 'result', () =>
    objectText(result as Record<string, unknown>, 'tools', () => `[${(tools as object[]).map(listingText).join(',')}]`),
  );
}

function listingText(listing: object): string {
  let text = listingTexts.get(listing);
  if (text === undefined) listingTexts.set(listing, (text = JSON.stringify(listing)));
  return text;
}

/** A plain object's JSON text, as JSON.stringify writes it, with the value of `key` written by `write`. */
function objectText(value: Record<string, unknown>, key: string, write: () => string): string {
  const members: string[] = [];
  for (const [name, member] of Object.entries(value)) {
    // What JSON.stringify leaves out of an object (undefined, functions, symbols) stays out.
    const text = name === key ? write() : JSON.stringify(member);
    if (text !== undefined) members.push(`${JSON.stringify(name)}:${text}`);
  }
  return `{${members.join(',')}}`;
}
