// The params schemas of the wire table: plain JSON Schema objects, built by a few helpers so that
// `FromSchema` can read the TypeScript type off the same object Ajv validates (no second source).
import { createRequire } from 'node:module'
import { HarnessError } from '@dsh/kernel'
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv'

/** A JSON Schema object (the subset the table uses). */
export type JsonSchema = { readonly [key: string]: unknown }

/** A schema whose TypeScript type is given rather than read (`~type` is never present at run time). */
type Typed<T> = { readonly '~type'?: T }

type Simplify<T> = { [K in keyof T]: T[K] } & {}
type ObjectOf<P, R> = Simplify<
  { -readonly [K in keyof P & R]: FromSchema<P[K]> } & { -readonly [K in Exclude<keyof P, R>]?: FromSchema<P[K]> }
>

/** The TypeScript type of a value that fits schema `S` (built with the helpers below). */
export type FromSchema<S> = S extends Typed<infer T> ? (unknown extends T ? Infer<S> : T) : Infer<S>
type Infer<S> = S extends { enum: readonly (infer E)[] }
  ? E
  : S extends { type: 'string' }
    ? string
    : S extends { type: 'integer' | 'number' }
      ? number
      : S extends { type: 'boolean' }
        ? boolean
        : S extends { type: 'object'; properties: infer P; required: readonly (infer R)[] }
          ? ObjectOf<P, R>
          : unknown

/** Builders of the schemas the table uses. Every object is open: unknown fields are ignored, as before. */
export const Schema = {
  string: <const O extends JsonSchema = Record<never, never>>(options?: O) => ({
    type: 'string' as const,
    ...(options as O),
  }),
  /** A string of at least one character. */
  text: <const O extends JsonSchema = Record<never, never>>(options?: O) => ({
    type: 'string' as const,
    minLength: 1 as const,
    ...(options as O),
  }),
  integer: <const O extends JsonSchema = Record<never, never>>(options?: O) => ({
    type: 'integer' as const,
    ...(options as O),
  }),
  oneOf: <const V extends readonly string[]>(values: V, description?: string) => ({
    type: 'string' as const,
    enum: values,
    ...(description ? { description } : {}),
  }),
  object: <const P extends Record<string, JsonSchema>, const R extends keyof P & string = never>(
    properties: P,
    required: readonly R[] = [],
  ) => ({ type: 'object' as const, properties, required }),
  /** A schema checked elsewhere (e.g. `parseAttachments`), typed as `T`. */
  typed: <T>(schema: JsonSchema): JsonSchema & Typed<T> => schema,
}

/** The empty params object. */
export const NoParams = Schema.object({})

const require = createRequire(import.meta.url)
let ajv: Ajv | undefined
const compiled = new WeakMap<JsonSchema, ValidateFunction>()

/**
 * Checks `value` against `schema`; throws `HarnessError('INVALID_PARAMS')` naming every field that
 * does not fit (`"text" must be a non-empty string`). Compiles each schema once, on first use.
 */
export function checkParams(schema: JsonSchema, value: unknown): void {
  let validate = compiled.get(schema)
  if (!validate) {
    ajv ??= new (require('ajv') as typeof import('ajv')).Ajv({ allErrors: true, strict: false })
    validate = ajv.compile(schema)
    compiled.set(schema, validate)
  }
  if (validate(value)) return
  const problems = [...new Set((validate.errors ?? []).map(describe))]
  throw new HarnessError('INVALID_PARAMS', problems.join('; '), {})
}

const ARTICLE: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
}

function describe(error: ErrorObject): string {
  const field = error.instancePath.slice(1).replaceAll('/', '.')
  const params = error.params as Record<string, unknown>
  const at = (name: string) => (name ? `"${name}"` : 'the params')
  switch (error.keyword) {
    case 'required':
      return `${at(field ? `${field}.${params.missingProperty}` : String(params.missingProperty))} is missing`
    case 'type':
      return `${at(field)} must be ${ARTICLE[String(params.type)] ?? String(params.type)}`
    case 'minLength':
      return params.limit === 1 ? `${at(field)} must be a non-empty string` : `${at(field)} ${error.message}`
    case 'minimum':
      return `${at(field)} must be an integer >= ${String(params.limit)}`
    case 'enum':
      return `${at(field)} must be one of ${(params.allowedValues as unknown[]).join(', ')}`
    default:
      return `${at(field)} ${error.message ?? 'is invalid'}`
  }
}
