// Checking setting values against their JSON Schema (Ajv, compiled once per key and service) and
// turning text from the command line or the environment into a value of the schema's type.
import { createRequire } from 'node:module'
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv'

const require = createRequire(import.meta.url)

/** A JSON Schema object (the subset dsh keys use: type, enum, pattern, properties, items...). */
export type JsonSchema = Readonly<Record<string, unknown>>

/** Compiles and runs key schemas. One per service: it holds compiled validators, nothing else. */
export class SchemaChecker {
  private _ajv: Ajv | undefined
  private readonly _compiled = new WeakMap<JsonSchema, ValidateFunction>()

  compile(schema: JsonSchema): ValidateFunction {
    let validate = this._compiled.get(schema)
    if (!validate) {
      this._ajv ??= new (require('ajv') as typeof import('ajv')).Ajv({ allErrors: true, strict: false })
      validate = this._ajv.compile(schema)
      this._compiled.set(schema, validate)
    }
    return validate
  }

  /**
   * Why `value` does not fit `schema` (one line naming what is allowed), or undefined when it fits.
   * With `key`, each problem names its field path from the key (`endpoints.local.baseUrl: ...`).
   */
  problem(schema: JsonSchema, value: unknown, key?: string): string | undefined {
    const validate = this.compile(schema)
    if (validate(value)) return undefined
    return (validate.errors ?? []).map((error) => describe(error, key)).join('; ')
  }
}

function describe(error: ErrorObject, key?: string): string {
  const path = error.instancePath.split('/').slice(1)
  const at = path.length > 0 ? `${[...(key ? [key] : []), ...path].join('.')}: ` : ''
  const params = error.params as Record<string, unknown>
  if (error.keyword === 'enum') return `${at}must be one of ${(params.allowedValues as unknown[]).join(', ')}`
  if (error.keyword === 'additionalProperties') return `${at}unknown field "${String(params.additionalProperty)}"`
  if (error.keyword === 'required') return `${at}missing field "${String(params.missingProperty)}"`
  if (error.keyword === 'type')
    return `${at}must be ${params.type === 'array' ? 'a list' : params.type === 'object' ? 'a mapping' : `a ${String(params.type)}`}`
  return `${at}${error.message ?? 'is invalid'}`
}

/** The schema of the value at `path` inside a value of `schema` (through properties, additionalProperties, items). */
export function subschema(schema: JsonSchema, path: readonly string[]): JsonSchema | undefined {
  let current: JsonSchema | undefined = schema
  for (const part of path) {
    if (!current) return undefined
    const properties = current.properties as Record<string, JsonSchema> | undefined
    const additional: unknown = current.additionalProperties
    current =
      properties?.[part] ??
      (typeof additional === 'object' ? (additional as JsonSchema) : undefined) ??
      (current.items as JsonSchema | undefined)
  }
  return current
}

/** Whether a value of `schema` may be a string (then text is taken as is, not parsed). */
function acceptsString(schema: JsonSchema | undefined): boolean {
  if (!schema) return false
  const type = schema.type
  if (type === 'string' || (Array.isArray(type) && type.includes('string'))) return true
  const alternatives = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined
  return alternatives?.some(acceptsString) ?? false
}

/**
 * The value that `text` (a command-line argument or an environment variable) stands for: the text
 * itself where the schema takes strings, else the text read as YAML (`true`, `8`, `[a, b]`, `{x: 1}`).
 */
export function parseText(text: string, schema: JsonSchema | undefined): unknown {
  if (acceptsString(schema)) return text
  const yaml = require('yaml') as typeof import('yaml')
  try {
    return yaml.parse(text)
  } catch {
    return text
  }
}
