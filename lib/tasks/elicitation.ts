import { z } from 'zod';

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

/**
 * What one question may ask and one answer may hold. The caps keep every check linear and small: a
 * question or answer beyond them is refused before it is looked at further.
 */
export const elicitationLimits = {
  maxFields: 50,
  maxOptions: 100,
  maxOptionLength: 500,
  maxAnswerBytes: 256 * 1024,
} as const;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const num = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
const str = (value: unknown) => (typeof value === 'string' ? value : undefined);

/** The choices of a select, undefined when the schema has none, or an error for choices that are not strings. */
function optionsOf(schema: Json): FieldOption[] | undefined | { error: string } {
  const options = rawOptionsOf(schema);
  if (!options || 'error' in options) return options;
  if (options.length === 0) return { error: 'a choice needs at least one option' };
  if (options.length > elicitationLimits.maxOptions) return { error: `at most ${elicitationLimits.maxOptions} options are allowed` };
  if (options.some((option) => option.value.length > elicitationLimits.maxOptionLength || option.label.length > elicitationLimits.maxOptionLength)) {
    return { error: `options may be at most ${elicitationLimits.maxOptionLength} characters` };
  }
  return options;
}

function rawOptionsOf(schema: Json): FieldOption[] | undefined | { error: string } {
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
  if (Object.keys(requestedSchema.properties).length > elicitationLimits.maxFields) {
    return { ok: false, message: `requestedSchema may have at most ${elicitationLimits.maxFields} properties` };
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

/** Text answers longer than this are refused whatever the schema allows (code points). */
const maxStringLength = 10_000;

// Each check runs on text already capped in length, so its cost is bounded by the caps above.
const emailSchema = z.email();
const urlSchema = z.url();
const dateSchema = z.iso.date();
/** RFC 3339 date-time: seconds and an offset required; T and Z in either case. */
const dateTimeSchema = z.iso.datetime({ offset: true });

function stringProblem(field: Extract<ElicitationField, { kind: 'string' }>, value: string): string | undefined {
  const limit = Math.min(field.maxLength ?? maxStringLength, maxStringLength);
  // A code point is one or two UTF-16 units: text with more than twice the limit in units is too long for sure.
  const length = value.length > limit * 2 ? Infinity : [...value].length;
  if (field.minLength !== undefined && length < field.minLength) return `must be at least ${field.minLength} characters`;
  if (length > limit) return `must be at most ${limit} characters`;
  if (field.format === 'email' && !emailSchema.safeParse(value).success) return 'must be an email address';
  if (field.format === 'uri' && !urlSchema.safeParse(value).success) return 'must be a URL';
  if (field.format === 'date' && !dateSchema.safeParse(value).success) return 'must be a date (YYYY-MM-DD)';
  if (field.format === 'date-time' && !dateTimeSchema.safeParse(value.toUpperCase()).success) return 'must be a date and time';
  return undefined;
}

/** The message for a missing value, or for one of the wrong type. */
const typeError = (wrongType: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : wrongType);

/** The zod schema one field's answer must satisfy. */
function answerSchemaOf(field: ElicitationField): z.ZodType {
  switch (field.kind) {
    case 'string':
      return z.string({ error: typeError('must be text') }).superRefine((value, ctx) => {
        const problem = stringProblem(field, value);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      });
    case 'number':
    case 'integer': {
      let schema = z.number({ error: typeError('must be a number') });
      if (field.kind === 'integer') schema = schema.int({ error: 'must be a whole number' });
      if (field.minimum !== undefined) schema = schema.min(field.minimum, { error: `must be at least ${field.minimum}` });
      if (field.maximum !== undefined) schema = schema.max(field.maximum, { error: `must be at most ${field.maximum}` });
      return schema;
    }
    case 'boolean':
      return z.boolean({ error: typeError('must be true or false') });
    case 'select':
      return z.enum(field.options.map((option) => option.value) as [string, ...string[]], { error: typeError('must be one of the choices') });
    case 'multiselect': {
      const choice = z.enum(field.options.map((option) => option.value) as [string, ...string[]], { error: 'must be a list of the choices' });
      // Each choice counts once, so no list is longer than the choices.
      const most = Math.min(field.maxItems ?? field.options.length, field.options.length);
      let schema = z.array(choice, { error: typeError('must be a list of the choices') }).max(most, { error: `choose at most ${most}` });
      if (field.minItems !== undefined) schema = schema.min(field.minItems, { error: `choose at least ${field.minItems}` });
      return schema.refine((values) => new Set(values).size === values.length, { error: 'must not name a choice twice' });
    }
  }
}

/** The zod schema of accepted content: every field, optional unless required, and nothing else. */
function contentSchemaOf(fields: ElicitationField[]) {
  const shape: Record<string, z.ZodType> = {};
  for (const field of fields) shape[field.name] = field.required ? answerSchemaOf(field) : answerSchemaOf(field).optional();
  return z.strictObject(shape);
}

/** The size of a value as JSON, or Infinity when it cannot be measured (too deep, cyclic). */
function jsonSize(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return Infinity;
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
  if (jsonSize(content) > elicitationLimits.maxAnswerBytes) {
    return { ok: false, message: `Invalid answer: content is larger than ${elicitationLimits.maxAnswerBytes} bytes`, fieldErrors: {} };
  }
  // Null means "not answered"; a prototype-free copy keeps inherited names (constructor) out of the answer.
  const given = Object.assign(
    Object.create(null) as Json,
    Object.fromEntries(Object.entries(content).filter(([, value]) => value !== null && value !== undefined)),
  );
  const parsed = contentSchemaOf(fields).safeParse(given);
  if (parsed.success) return { ok: true, response: { action, content: { ...parsed.data } as ElicitResponse['content'] } };
  // A Map, so that a key named __proto__ is reported like any other.
  const problems = new Map<string, string>();
  for (const issue of parsed.error.issues) {
    const names = issue.code === 'unrecognized_keys' ? issue.keys : [String(issue.path[0])];
    const problem = issue.code === 'unrecognized_keys' ? 'is not a field of this question' : issue.message;
    for (const name of names) if (!problems.has(name)) problems.set(name, problem);
  }
  const fieldErrors = Object.fromEntries(problems);
  const message = [...problems]
    .map(([name, problem]) => `${name} ${problem}`)
    .join('; ');
  return { ok: false, message: `Invalid answer: ${message}`, fieldErrors };
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
