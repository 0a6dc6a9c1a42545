/**
 * The form-mode elicitation schemas of MCP 2025-11-25: a flat object of primitive fields. One normal
 * form (`fields`) serves the dashboard's form and the validation of every answer, from either side.
 */

export interface FieldOption {
  value: string;
  label: string;
}

export type ElicitationField = {
  name: string;
  title: string;
  description?: string;
  required: boolean;
} & (
  | { kind: 'string'; format?: 'email' | 'uri' | 'date' | 'date-time'; minLength?: number; maxLength?: number; default?: string }
  | { kind: 'number' | 'integer'; minimum?: number; maximum?: number; default?: number }
  | { kind: 'boolean'; default?: boolean }
  | { kind: 'select'; options: FieldOption[]; default?: string }
  | { kind: 'multiselect'; options: FieldOption[]; minItems?: number; maxItems?: number; default?: string[] }
);

export type ElicitAction = 'accept' | 'decline' | 'cancel';
export interface ElicitResponse {
  action: ElicitAction;
  content?: Record<string, string | number | boolean | string[]>;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const num = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
const str = (value: unknown) => (typeof value === 'string' ? value : undefined);

/** The choices of a select, undefined when the schema has none, or an error for choices that are not strings. */
function optionsOf(schema: Json): FieldOption[] | undefined | { error: string } {
  if (Array.isArray(schema.oneOf) || Array.isArray(schema.anyOf)) {
    const choices = (schema.oneOf ?? schema.anyOf) as unknown[];
    if (!choices.every((option) => isObject(option) && typeof option.const === 'string')) return { error: 'every choice needs a string const' };
    return (choices as Json[]).map((option) => ({ value: String(option.const), label: String(option.title ?? option.const) }));
  }
  if (Array.isArray(schema.enum)) {
    if (!schema.enum.every((value) => typeof value === 'string')) return { error: 'enum values must be strings' };
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((value, index) => ({ value: String(value), label: String(names[index] ?? value) }));
  }
  return undefined;
}

/** Form fields named so would collide with the dashboard form's own. */
const reservedPrefix = '$';

/** The fields of a requestedSchema, or an error naming what is not a valid elicitation schema. */
export function describeFields(requestedSchema: unknown): { ok: true; fields: ElicitationField[] } | { ok: false; message: string } {
  if (!isObject(requestedSchema) || requestedSchema.type !== 'object' || !isObject(requestedSchema.properties)) {
    return { ok: false, message: 'requestedSchema must be an object schema with properties' };
  }
  const required = new Set(Array.isArray(requestedSchema.required) ? requestedSchema.required.map(String) : []);
  const fields: ElicitationField[] = [];
  for (const [name, raw] of Object.entries(requestedSchema.properties)) {
    if (!isObject(raw)) return { ok: false, message: `requestedSchema.properties.${name} must be a schema` };
    if (name.startsWith(reservedPrefix)) return { ok: false, message: `requestedSchema.properties.${name}: names may not start with ${reservedPrefix}` };
    const base = { name, title: str(raw.title) ?? name, description: str(raw.description), required: required.has(name) };
    const options = optionsOf(raw);
    if (options && 'error' in options) return { ok: false, message: `requestedSchema.properties.${name}: ${options.error}` };
    if (raw.type === 'string' && options) {
      fields.push({ ...base, kind: 'select', options, default: str(raw.default) });
    } else if (raw.type === 'string') {
      const format = ['email', 'uri', 'date', 'date-time'].includes(String(raw.format)) ? (raw.format as 'email') : undefined;
      fields.push({ ...base, kind: 'string', format, minLength: num(raw.minLength), maxLength: num(raw.maxLength), default: str(raw.default) });
    } else if (raw.type === 'number' || raw.type === 'integer') {
      fields.push({ ...base, kind: raw.type, minimum: num(raw.minimum), maximum: num(raw.maximum), default: num(raw.default) });
    } else if (raw.type === 'boolean') {
      fields.push({ ...base, kind: 'boolean', default: typeof raw.default === 'boolean' ? raw.default : undefined });
    } else if (raw.type === 'array' && isObject(raw.items)) {
      const itemOptions = optionsOf(raw.items);
      if (!itemOptions) return { ok: false, message: `requestedSchema.properties.${name}: a multi-select needs items with enum or anyOf` };
      if ('error' in itemOptions) return { ok: false, message: `requestedSchema.properties.${name}.items: ${itemOptions.error}` };
      const defaults = Array.isArray(raw.default) ? raw.default.map(String) : undefined;
      fields.push({ ...base, kind: 'multiselect', options: itemOptions, minItems: num(raw.minItems), maxItems: num(raw.maxItems), default: defaults });
    } else {
      return { ok: false, message: `requestedSchema.properties.${name}: type ${String(raw.type)} is not allowed in an elicitation` };
    }
  }
  return { ok: true, fields };
}

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const datePattern = /^\d{4}-\d{2}-\d{2}$/;
/** RFC 3339 date-time: seconds and an offset required; T and Z in either case. */
const dateTimePattern = /^(\d{4}-\d{2}-\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/i;

/** A calendar date that exists (no 31 February): it survives a round trip through Date. */
const isRealDate = (value: string) => datePattern.test(value) && !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) && new Date(`${value}T00:00:00Z`).toISOString().startsWith(value);

function checkField(field: ElicitationField, value: unknown): string | undefined {
  switch (field.kind) {
    case 'string': {
      if (typeof value !== 'string') return 'must be text';
      // Characters as people count them (code points), not UTF-16 units.
      const length = [...value].length;
      if (field.minLength !== undefined && length < field.minLength) return `must be at least ${field.minLength} characters`;
      if (field.maxLength !== undefined && length > field.maxLength) return `must be at most ${field.maxLength} characters`;
      if (field.format === 'email' && !emailPattern.test(value)) return 'must be an email address';
      if (field.format === 'uri' && !URL.canParse(value)) return 'must be a URL';
      if (field.format === 'date' && !isRealDate(value)) return 'must be a date (YYYY-MM-DD)';
      if (field.format === 'date-time') {
        const match = dateTimePattern.exec(value);
        if (!match || !isRealDate(match[1])) return 'must be a date and time';
      }
      return undefined;
    }
    case 'number':
    case 'integer': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a number';
      if (field.kind === 'integer' && !Number.isInteger(value)) return 'must be a whole number';
      if (field.minimum !== undefined && value < field.minimum) return `must be at least ${field.minimum}`;
      if (field.maximum !== undefined && value > field.maximum) return `must be at most ${field.maximum}`;
      return undefined;
    }
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be true or false';
    case 'select':
      return typeof value === 'string' && field.options.some((option) => option.value === value) ? undefined : 'must be one of the choices';
    case 'multiselect': {
      if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || !field.options.some((option) => option.value === item))) {
        return 'must be a list of the choices';
      }
      if (field.minItems !== undefined && value.length < field.minItems) return `choose at least ${field.minItems}`;
      if (field.maxItems !== undefined && value.length > field.maxItems) return `choose at most ${field.maxItems}`;
      return undefined;
    }
  }
}

export type ValidatedResponse = { ok: true; response: ElicitResponse } | { ok: false; message: string; fieldErrors: Record<string, string> };

/** Checks an answer against the question's schema: the action, then every field of accepted content. */
export function validateElicitResponse(fields: ElicitationField[], raw: unknown): ValidatedResponse {
  if (!isObject(raw) || !['accept', 'decline', 'cancel'].includes(String(raw.action))) {
    return { ok: false, message: 'The answer must have action "accept", "decline" or "cancel"', fieldErrors: {} };
  }
  const action = raw.action as ElicitAction;
  if (action !== 'accept') return { ok: true, response: { action } };
  const content = raw.content ?? {};
  if (!isObject(content)) return { ok: false, message: 'content must be an object', fieldErrors: {} };
  const fieldErrors: Record<string, string> = {};
  for (const field of fields) {
    const value = Object.hasOwn(content, field.name) ? content[field.name] : undefined;
    if (value === undefined || value === null) {
      if (field.required) fieldErrors[field.name] = 'is required';
      continue;
    }
    const problem = checkField(field, value);
    if (problem) fieldErrors[field.name] = problem;
  }
  for (const name of Object.keys(content)) {
    if (!fields.some((field) => field.name === name)) fieldErrors[name] = 'is not a field of this question';
  }
  if (Object.keys(fieldErrors).length > 0) {
    const message = Object.entries(fieldErrors)
      .map(([name, problem]) => `${name} ${problem}`)
      .join('; ');
    return { ok: false, message: `Invalid answer: ${message}`, fieldErrors };
  }
  const accepted = Object.fromEntries(
    fields.filter((field) => Object.hasOwn(content, field.name) && content[field.name] != null).map((field) => [field.name, content[field.name]]),
  );
  return { ok: true, response: { action, content: accepted as ElicitResponse['content'] } };
}

/** Turns a submitted HTML form into content, typed by the fields (the form itself sends only text). */
export function contentFromForm(fields: ElicitationField[], form: { get(name: string): unknown; getAll(name: string): unknown[] }) {
  const content: Record<string, unknown> = {};
  for (const field of fields) {
    const raw = form.get(field.name);
    const text = typeof raw === 'string' ? raw.trim() : '';
    if (field.kind === 'boolean') content[field.name] = raw === 'on' || raw === 'true';
    else if (field.kind === 'multiselect') {
      const values = form.getAll(field.name).map(String);
      if (values.length > 0 || field.required) content[field.name] = values;
    } else if (text === '') continue;
    else if (field.kind === 'number' || field.kind === 'integer') content[field.name] = Number(text);
    else if (field.kind === 'string' && field.format === 'date-time') {
      // <input type="datetime-local"> has no zone: the answer is taken as UTC.
      content[field.name] = /Z|[+-]\d{2}:\d{2}$/.test(text) ? text : `${text.length === 16 ? `${text}:00` : text}Z`;
    } else content[field.name] = text;
  }
  return content;
}
