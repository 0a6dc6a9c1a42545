import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '@/lib/auth/sha256';

/** Stored token hashes were written with a Hash object: the one-call hash must give the same hex for any text. */
describe('sha256Hex', () => {
  it('hashes any text, as UTF-8, exactly as a Hash object does', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => {
        expect(sha256Hex(text)).toBe(createHash('sha256').update(text).digest('hex'));
      }),
      { numRuns: 2_000 },
    );
    // FIPS 180-2's example.
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
