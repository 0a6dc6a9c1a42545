/**
 * A strict parser for WWW-Authenticate (RFC 9110 section 11.6.1, formerly RFC 7235 section 4.1): what a
 * careful client does with our challenges. Anything that is not a list of challenges, each a scheme
 * followed by a token68 or by auth-params (token BWS "=" BWS token / quoted-string), throws.
 */
export interface Challenge {
  /** Lower-cased: schemes are case-insensitive. */
  scheme: string;
  /** Parameter names lower-cased (they are case-insensitive); values unquoted. */
  params: Record<string, string>;
  token68?: string;
}

const tchar = /[!#$%&'*+.^_`|~0-9A-Za-z-]/;
const qdtext = /[\t \x21\x23-\x5b\x5d-\x7e\x80-\xff]/;
const quotedPairChar = /[\t\x20-\x7e\x80-\xff]/;
const token68Pattern = /^[A-Za-z0-9\-._~+/]+=*/;

class ChallengeParser {
  private position = 0;

  constructor(private readonly header: string) {}

  private fail(reason: string): never {
    throw new Error(`malformed WWW-Authenticate at ${this.position} (${reason}): ${this.header}`);
  }

  done(): boolean {
    return this.position >= this.header.length;
  }

  private peek(): string | undefined {
    return this.header[this.position];
  }

  private skipWhitespace(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.position += 1;
  }

  /** `1#element` allows empty elements: any run of commas and whitespace between two of them. */
  skipListSeparators(): void {
    while (this.peek() === ',' || this.peek() === ' ' || this.peek() === '\t') this.position += 1;
  }

  private token(): string {
    const start = this.position;
    while (!this.done() && tchar.test(this.peek()!)) this.position += 1;
    if (this.position === start) this.fail('expected a token');
    return this.header.slice(start, this.position);
  }

  private quotedString(): string {
    this.position += 1;
    let value = '';
    for (;;) {
      if (this.done()) this.fail('unterminated quoted-string');
      const char = this.peek()!;
      if (char === '"') {
        this.position += 1;
        return value;
      }
      if (char === '\\') {
        const escaped = this.header[this.position + 1];
        if (escaped === undefined || !quotedPairChar.test(escaped)) this.fail('bad quoted-pair');
        value += escaped;
        this.position += 2;
        continue;
      }
      if (!qdtext.test(char)) this.fail(`character ${JSON.stringify(char)} not allowed in a quoted-string`);
      value += char;
      this.position += 1;
    }
  }

  /** A token68 that makes up the whole rest of the challenge, or null (and nothing consumed). */
  private token68(): string | null {
    const match = token68Pattern.exec(this.header.slice(this.position));
    if (!match) return null;
    const after = this.position + match[0].length;
    const rest = this.header.slice(after).replace(/^[ \t]*/, '');
    if (rest !== '' && !rest.startsWith(',')) return null;
    this.position = after;
    return match[0];
  }

  /** Whether an auth-param (token BWS "=") starts here; consumes nothing. */
  private atAuthParam(): boolean {
    const start = this.position;
    try {
      this.token();
      this.skipWhitespace();
      return this.peek() === '=';
    } catch {
      return false;
    } finally {
      this.position = start;
    }
  }

  private authParams(params: Record<string, string>): void {
    for (;;) {
      const name = this.token().toLowerCase();
      this.skipWhitespace();
      if (this.peek() !== '=') this.fail('expected "=" after a parameter name');
      this.position += 1;
      this.skipWhitespace();
      const value = this.peek() === '"' ? this.quotedString() : this.token();
      if (name in params) this.fail(`parameter ${name} given twice`);
      params[name] = value;
      const afterParam = this.position;
      this.skipWhitespace();
      if (this.peek() !== ',') {
        this.position = afterParam;
        return;
      }
      this.skipListSeparators();
      if (this.done() || !this.atAuthParam()) {
        this.position = afterParam;
        return;
      }
    }
  }

  challenge(): Challenge {
    const challenge: Challenge = { scheme: this.token().toLowerCase(), params: {} };
    if (this.peek() !== ' ') return challenge;
    while (this.peek() === ' ') this.position += 1;
    if (this.done() || this.peek() === ',') return challenge;
    const token68 = this.atAuthParam() ? null : this.token68();
    if (token68 !== null) challenge.token68 = token68;
    else this.authParams(challenge.params);
    return challenge;
  }

  afterChallenge(): void {
    this.skipWhitespace();
    if (this.done()) return;
    if (this.peek() !== ',') this.fail('expected "," or the end after a challenge');
    this.skipListSeparators();
  }
}

export function parseWwwAuthenticate(header: string): Challenge[] {
  const parser = new ChallengeParser(header);
  const challenges: Challenge[] = [];
  parser.skipListSeparators();
  while (!parser.done()) {
    challenges.push(parser.challenge());
    parser.afterChallenge();
  }
  if (challenges.length === 0) throw new Error('WWW-Authenticate names no challenge');
  return challenges;
}

/** RFC 6750 section 3: error and error_description stay within these characters, even when quoted. */
const bearerTextValue = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/;
const bearerScopeValue = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

/**
 * The parameters of the one Bearer challenge in a header, checked against RFC 6750 section 3 (which
 * characters error, error_description and scope may hold); throws on anything a strict client refuses.
 */
export function bearerChallenge(header: string | null): Record<string, string> {
  if (header === null) throw new Error('no WWW-Authenticate header');
  const bearers = parseWwwAuthenticate(header).filter((challenge) => challenge.scheme === 'bearer');
  if (bearers.length !== 1) throw new Error(`expected one Bearer challenge in ${header}`);
  const { params, token68 } = bearers[0];
  if (token68 !== undefined) throw new Error(`a Bearer challenge carries auth-params, not a token68: ${header}`);
  for (const name of ['error', 'error_description']) {
    if (name in params && !bearerTextValue.test(params[name])) throw new Error(`${name} has characters RFC 6750 forbids: ${header}`);
  }
  if ('scope' in params && !bearerScopeValue.test(params.scope)) throw new Error(`scope is not a list of scope tokens: ${header}`);
  return params;
}
