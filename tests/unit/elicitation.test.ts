import { describe, expect, it } from 'vitest';
import { contentFromForm, describeFields, elicitationLimits, validateElicitResponse, type ElicitationField } from '@/lib/tasks/elicitation';

function fieldsOf(properties: Record<string, unknown>, required: string[] = Object.keys(properties)): ElicitationField[] {
  const described = describeFields({ type: 'object', properties, required });
  if (!described.ok) throw new Error(described.message);
  return described.fields;
}

const accept = (fields: ElicitationField[], content: Record<string, unknown>) => validateElicitResponse(fields, { action: 'accept', content });

describe('elicitation schemas', () => {
  it('describes every primitive the spec allows', () => {
    const fields = fieldsOf({
      s: { type: 'string', minLength: 1, format: 'email' },
      n: { type: 'number', minimum: 0 },
      i: { type: 'integer', maximum: 9 },
      b: { type: 'boolean', default: false },
      e: { type: 'string', enum: ['a', 'b'] },
      o: { type: 'string', oneOf: [{ const: 'x', title: 'Ex' }] },
      l: { type: 'string', enum: ['p'], enumNames: ['Pea'] },
      m: { type: 'array', items: { type: 'string', enum: ['q'] } },
      t: { type: 'array', items: { anyOf: [{ const: 'r', title: 'Ar' }] } },
    });
    expect(fields.map((field) => [field.name, field.kind])).toEqual([
      ['s', 'string'],
      ['n', 'number'],
      ['i', 'integer'],
      ['b', 'boolean'],
      ['e', 'select'],
      ['o', 'select'],
      ['l', 'select'],
      ['m', 'multiselect'],
      ['t', 'multiselect'],
    ]);
    expect(fields.find((field) => field.name === 'l')).toMatchObject({ options: [{ value: 'p', label: 'Pea' }] });
  });

  it('refuses schemas an elicitation may not use', () => {
    for (const bad of [
      { type: 'object' },
      { type: 'object', properties: { x: { type: 'object' } } },
      { type: 'object', properties: { x: { type: 'string', enum: [1, 2] } } },
      { type: 'object', properties: { x: { type: 'string', oneOf: [{ title: 'no const' }] } } },
      { type: 'object', properties: { $action: { type: 'string' } } },
    ]) {
      expect(describeFields(bad).ok).toBe(false);
    }
  });
});

describe('answers', () => {
  it('accepts decline and cancel without content, and refuses an unknown action', () => {
    const fields = fieldsOf({ x: { type: 'string' } });
    expect(validateElicitResponse(fields, { action: 'decline' })).toEqual({ ok: true, response: { action: 'decline' } });
    expect(validateElicitResponse(fields, { action: 'cancel', content: { x: 1 } })).toEqual({ ok: true, response: { action: 'cancel' } });
    expect(validateElicitResponse(fields, { action: 'maybe' }).ok).toBe(false);
    expect(validateElicitResponse(fields, null).ok).toBe(false);
  });

  it('checks required fields, types, bounds and unknown fields', () => {
    const fields = fieldsOf({ n: { type: 'integer', minimum: 1, maximum: 3 }, s: { type: 'string', maxLength: 2 } }, ['n']);
    expect(accept(fields, { n: 2 })).toEqual({ ok: true, response: { action: 'accept', content: { n: 2 } } });
    const refused = accept(fields, { n: 2.5, s: 'abc', extra: true });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.fieldErrors).toEqual({ n: 'must be a whole number', s: 'must be at most 2 characters', extra: 'is not a field of this question' });
    expect(accept(fields, { n: '2' }).ok).toBe(false);
    expect(accept(fields, {}).ok).toBe(false);
  });

  it('counts characters, not UTF-16 units', () => {
    const fields = fieldsOf({ s: { type: 'string', maxLength: 1 } });
    expect(accept(fields, { s: '😀' }).ok).toBe(true);
    expect(accept(fields, { s: '😀😀' }).ok).toBe(false);
  });

  it('checks dates and date-times for real', () => {
    const fields = fieldsOf({ d: { type: 'string', format: 'date' } });
    expect(accept(fields, { d: '2024-02-29' }).ok).toBe(true);
    expect(accept(fields, { d: '2024-02-31' }).ok).toBe(false);
    expect(accept(fields, { d: '2024-2-1' }).ok).toBe(false);
    const times = fieldsOf({ t: { type: 'string', format: 'date-time' } });
    for (const good of ['2026-12-01T09:30:00Z', '2026-12-01t09:30:00.5z', '2026-12-01T23:59:59+05:30']) expect(accept(times, { t: good }).ok).toBe(true);
    for (const bad of ['2026-12-01T09:30Z', '2026-12-01T24:00:00Z', '2026-02-30T10:00:00Z', '2026-12-01 09:30:00Z', '2026-12-01T09:30:00']) {
      expect(accept(times, { t: bad }).ok).toBe(false);
    }
  });

  it('ignores inherited property names', () => {
    const fields = fieldsOf({ constructor: { type: 'string' } }, []);
    expect(accept(fields, {})).toEqual({ ok: true, response: { action: 'accept', content: {} } });
  });

  it('turns a submitted form into typed content', () => {
    const fields = fieldsOf(
      {
        n: { type: 'number' },
        b: { type: 'boolean' },
        m: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
        t: { type: 'string', format: 'date-time' },
        s: { type: 'string' },
      },
      ['m'],
    );
    const form = new FormData();
    form.set('n', ' 4.5 ');
    form.append('m', 'a');
    form.append('m', 'b');
    form.set('t', '2026-12-01T09:30');
    form.set('s', '');
    expect(contentFromForm(fields, form)).toEqual({ n: 4.5, b: false, m: ['a', 'b'], t: '2026-12-01T09:30:00Z' });
  });
});

describe('answers from a hostile client', () => {
  // The timeout only guards against a hang: before the caps, this answer kept the event loop busy for minutes.
  it('refuses a 1 MB answer built to make an email check backtrack', { timeout: 2000 }, () => {
    const fields = fieldsOf({ email: { type: 'string', format: 'email' } });
    const refused = accept(fields, { email: `a@${'.'.repeat(1024 * 1024)} ` });
    expect(refused.ok).toBe(false);
  });

  it('refuses the same pattern within the size caps as not an email', { timeout: 2000 }, () => {
    const fields = fieldsOf({ email: { type: 'string', format: 'email' } });
    const refused = accept(fields, { email: `a@${'.'.repeat(9000)} ` });
    expect(refused).toMatchObject({ ok: false, fieldErrors: { email: 'must be an email address' } });
    expect(accept(fields, { email: 'ada@example.com' }).ok).toBe(true);
  });

  it('caps text at 10,000 characters even when the schema sets no maximum', () => {
    const fields = fieldsOf({ s: { type: 'string' } });
    expect(accept(fields, { s: 'x'.repeat(10_000) }).ok).toBe(true);
    expect(accept(fields, { s: 'x'.repeat(10_001) })).toMatchObject({ ok: false, fieldErrors: { s: 'must be at most 10000 characters' } });
  });

  it('refuses content larger than the answer limit before checking its fields', () => {
    const fields = fieldsOf({ s: { type: 'string' } }, []);
    const refused = accept(fields, { s: 'x', padding: 'y'.repeat(elicitationLimits.maxAnswerBytes) });
    expect(refused).toMatchObject({ ok: false, fieldErrors: {} });
    if (!refused.ok) expect(refused.message).toContain('larger than');
  });

  it('names every unknown key of a large answer once, in time linear in its size', { timeout: 2000 }, () => {
    const fields = fieldsOf(Object.fromEntries(Array.from({ length: elicitationLimits.maxFields }, (_, index) => [`f${index}`, { type: 'string' }])), []);
    const content = Object.fromEntries(Array.from({ length: 20_000 }, (_, index) => [`k${index}`, 1]));
    const refused = accept(fields, content);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(Object.keys(refused.fieldErrors)).toHaveLength(20_000);
  });

  it('refuses a multi-select that repeats a choice or lists more than there are', () => {
    const fields = fieldsOf({ m: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } } });
    expect(accept(fields, { m: ['a', 'b'] }).ok).toBe(true);
    expect(accept(fields, { m: ['a', 'a'] }).ok).toBe(false);
    expect(accept(fields, { m: ['a', 'b', 'a', 'b'] })).toMatchObject({ ok: false, fieldErrors: { m: 'choose at most 2' } });
    expect(accept(fields, { m: ['a', 'c'] })).toMatchObject({ ok: false, fieldErrors: { m: 'must be a list of the choices' } });
  });

  it('refuses questions with too many fields or options, or overlong options', () => {
    const many = (count: number) => Array.from({ length: count }, (_, index) => `o${index}`);
    // The README's numbers, not the code's constants: a changed constant must show here.
    const tooManyFields = Object.fromEntries(many(51).map((name) => [name, { type: 'string' }]));
    const fiftyFields = Object.fromEntries(many(50).map((name) => [name, { type: 'string' }]));
    expect(describeFields({ type: 'object', properties: fiftyFields }).ok).toBe(true);
    expect(describeFields({ type: 'object', properties: tooManyFields }).ok).toBe(false);
    expect(describeFields({ type: 'object', properties: { x: { type: 'string', enum: many(100) } } }).ok).toBe(true);
    expect(describeFields({ type: 'object', properties: { x: { type: 'string', enum: many(101) } } }).ok).toBe(false);
    expect(describeFields({ type: 'object', properties: { x: { type: 'array', items: { enum: many(101) } } } }).ok).toBe(false);
    expect(describeFields({ type: 'object', properties: { x: { type: 'string', enum: ['x'.repeat(501)] } } }).ok).toBe(false);
    expect(describeFields({ type: 'object', properties: { x: { type: 'string', enum: [] } } }).ok).toBe(false);
  });

  it('keeps a key named __proto__ an ordinary unknown field', () => {
    const fields = fieldsOf({ s: { type: 'string' } }, []);
    const refused = validateElicitResponse(fields, JSON.parse('{"action":"accept","content":{"__proto__":{"s":"x"}}}'));
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(Object.entries(refused.fieldErrors)).toEqual([['__proto__', 'is not a field of this question']]);
  });
});
