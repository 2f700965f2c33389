// Layers and the patch algorithm: the one code path that both `--dump-config` and boot use.
// Layers apply to an empty row list in order; a row with a known id replaces that row whole (never a
// deep merge), a new id inserts, `disabled: true` keeps the row but stops it from activating.
import { readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { didYouMean, editDistance, HarnessError } from '@dsh/kernel'
import type { ErrorObject } from 'ajv'
import { ConfigExpr, configTags } from './expressions.js'
import rowListValidator from './generated/rows-validator.js'
import { loadYaml } from './lazy.js'
import { cachedParse, type ParseCache } from './parse-cache.js'

export type LayerKind = 'bundle' | 'profile' | 'home' | 'patch' | 'launcher'

/** A row as a layer file writes it. `use` may be omitted only when patching a known id. */
export interface RowSpec {
  id: string
  use?: string
  config?: unknown
  disabled?: boolean | ConfigExpr
}

/**
 * A patch entry naming a bundle package (`- bundle: dsh-plugin-x`): that bundle's rows apply at this
 * point of the patch, resolved from the patch file's directory (an installed plugin). Decision 310.
 */
export interface BundleRef {
  bundle: string
  /** `true`: the bundle is named but its rows are left out (the plugin stays installed). */
  disabled?: boolean
  /** Shipped row ids the user confirmed this (plugin) bundle may replace (`dsh plugin add --allow-replace`). */
  replaces?: string[]
}

/** What a layer file holds: rows, and (in user patches) bundle references. */
export type LayerEntry = RowSpec | BundleRef

export function isBundleRef(entry: LayerEntry): entry is BundleRef {
  return 'bundle' in entry
}

export interface Layer {
  kind: LayerKind
  /** Human name used in provenance comments, e.g. `bundle base` or `--patch ./x.yml`. */
  label: string
  /** The file the rows came from, when they came from a file. */
  file?: string
  rows: RowSpec[]
  /** A bundle a patch names that dsh does not ship, and the shipped rows the user let it replace. */
  plugin?: { replaces: string[] }
}

/** A row of the effective tree with where it came from. */
export interface EffectiveRow {
  id: string
  use: string
  config?: unknown
  disabled: boolean | ConfigExpr
  /** The layer that inserted the row. */
  origin: string
  /** Every later layer that replaced it, in order. */
  patchedBy: string[]
  /** Directory against which a relative `use` resolves (the file of the layer that set `use`). */
  baseDir: string
}

export interface EffectiveTree {
  rows: EffectiveRow[]
  warnings: string[]
  layers: Pick<Layer, 'kind' | 'label' | 'file'>[]
}

/** The row-list schema (rows.schema.json), compiled by Ajv at build time (scripts/validators.mjs). */
const validateRows = rowListValidator as { (value: unknown): boolean; errors?: ErrorObject[] | null }

const ROW_FIELDS = ['id', 'use', 'config', 'disabled']
const BUNDLE_FIELDS = ['bundle', 'disabled', 'replaces']
const FIELD_SHAPES: Record<string, string> = {
  id: 'a row id (letters, digits, . _ / -)',
  use: 'a module specifier such as "@dsh/llm/deepseek" or "./my-plugin.js"',
  bundle: 'an installed bundle package name',
  disabled: 'true or false',
  replaces: 'a list of bundle names',
}

/** One schema problem of a layer, by row and field, with the shape expected there. */
function rowProblem(error: ErrorObject, value: unknown): string {
  const [index, field] = error.instancePath.split('/').slice(1)
  const params = error.params as Record<string, unknown>
  if (index === undefined) return 'the file must be a YAML list of rows (- id: NAME, use: MODULE, config: ...)'
  const item = Array.isArray(value) ? (value[Number(index)] as Record<string, unknown> | undefined) : undefined
  const isBundle = item !== null && typeof item === 'object' && 'bundle' in item
  const id = item && typeof item === 'object' && typeof item.id === 'string' ? ` (id ${item.id})` : ''
  const where = `row ${Number(index) + 1}${id}`
  const fields = isBundle ? BUNDLE_FIELDS : ROW_FIELDS
  const shape = isBundle ? '{ bundle, disabled?, replaces? }' : '{ id, use?, config?, disabled? }'
  if (field !== undefined) {
    const expected = FIELD_SHAPES[field]
    return `${where}, field ${field}: ${error.message ?? 'is invalid'}${expected ? ` (expected ${expected})` : ''}`
  }
  if (error.keyword === 'additionalProperties') {
    const extra = String(params.additionalProperty)
    const near = fields.find((name) => editDistance(name, extra) <= 2)
    return `${where}: unknown field "${extra}"${near ? ` (did you mean "${near}"?)` : ''}; a ${isBundle ? 'bundle reference' : 'row'} is ${shape}`
  }
  if (error.keyword === 'required')
    return `${where}: missing field "${String(params.missingProperty)}"; a row is ${shape}`
  if (error.keyword === 'type') return `${where}: must be a mapping ${shape}`
  return `${where}: ${error.message ?? 'is invalid'}; expected ${shape}`
}

/**
 * Validates parsed layer content: rows and bundle references. Throws `CONFIG_INVALID` listing every
 * problem with its path. An empty document is an empty layer.
 */
export function checkEntries(value: unknown, source: string): LayerEntry[] {
  if (value === null || value === undefined) return []
  if (!validateRows(value)) {
    const problems = (validateRows.errors ?? [])
      .filter((e) => e.keyword !== 'if')
      .map((e) => `  - ${rowProblem(e, value)}`)
    throw new HarnessError(
      'CONFIG_INVALID',
      `${source}: not a list of rows { id, use?, config?, disabled? } or bundles { bundle, disabled?, replaces? }:\n${problems.join('\n')}`,
      { source, problems },
    )
  }
  const entries = value as LayerEntry[]
  const seen = new Set<string>()
  for (const [index, row] of entries.entries()) {
    if (isBundleRef(row)) continue
    if (seen.has(row.id)) {
      throw new HarnessError('CONFIG_INVALID', `${source}: row id "${row.id}" appears twice (row ${index})`, {
        source,
        id: row.id,
      })
    }
    seen.add(row.id)
    const disabled = row.disabled
    if (disabled !== undefined && typeof disabled !== 'boolean' && !(disabled instanceof ConfigExpr)) {
      throw new HarnessError(
        'CONFIG_INVALID',
        `${source}: row "${row.id}": disabled must be true, false or !platform`,
        {
          source,
          id: row.id,
        },
      )
    }
  }
  return entries
}

/** Like `checkEntries`, for a file that may hold rows only (a bundle's rows file). */
export function checkRows(value: unknown, source: string): RowSpec[] {
  return rowsOnly(checkEntries(value, source), source)
}

function rowsOnly(entries: LayerEntry[], source: string): RowSpec[] {
  const ref = entries.find(isBundleRef)
  if (ref) {
    throw new HarnessError(
      'CONFIG_INVALID',
      `${source}: names bundle "${ref.bundle}", but only a patch may name a bundle (a bundle file holds rows); list it in the profile's bundles or in a patch`,
      { source, bundle: ref.bundle },
    )
  }
  return entries as RowSpec[]
}

/** Parses YAML layer text (rows and bundle references). Throws `CONFIG_INVALID` with line numbers. */
export function parseLayerEntries(text: string, source: string, cache?: ParseCache): LayerEntry[] {
  return checkEntries(
    cachedParse(cache, 'layer', text, () => parseYaml(text, source)),
    source,
  )
}

function parseYaml(text: string, source: string): unknown {
  const { LineCounter, parseDocument } = loadYaml()
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { customTags: configTags, lineCounter, prettyErrors: true })
  const problems = [...doc.errors, ...doc.warnings]
  if (problems.length > 0) {
    const lines = problems.map((e) => `  - ${e.message.split('\n')[0]}`)
    throw new HarnessError('CONFIG_INVALID', `${source}: invalid YAML:\n${lines.join('\n')}`, { source })
  }
  return doc.toJS()
}

/** Parses YAML layer text that holds rows only (with the config tags). */
export function parseLayerText(text: string, source: string): RowSpec[] {
  return rowsOnly(parseLayerEntries(text, source), source)
}

/**
 * Reads a rows-only layer file. Throws `CONFIG_NOT_FOUND` when missing, `CONFIG_INVALID` when malformed.
 * With a `cache`, an unchanged file is not parsed again (parse-cache.ts).
 */
export function readLayer(kind: LayerKind, label: string, file: string, cache?: ParseCache): Layer {
  return { kind, label, file, rows: rowsOnly(readLayerEntries(label, file, cache), file) }
}

/** Reads a layer file's rows and bundle references. */
export function readLayerEntries(label: string, file: string, cache?: ParseCache): LayerEntry[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new HarnessError(
      'CONFIG_NOT_FOUND',
      code === 'ENOENT' ? `${label}: file not found: ${file}` : `${label}: cannot read ${file}: ${code}`,
      { file, label },
    )
  }
  return parseLayerEntries(text, file, cache)
}

/** Applies layers in order to an empty list. Pure: the same layers always give the same tree. */
export function applyLayers(layers: Layer[], defaultBaseDir: string): EffectiveTree {
  const rows: EffectiveRow[] = []
  const byId = new Map<string, EffectiveRow>()
  const warnings: string[] = []
  for (const layer of layers) {
    const baseDir = layer.file ? dirname(layer.file) : defaultBaseDir
    for (const spec of layer.rows) {
      const existing = byId.get(spec.id)
      if (existing) {
        // Whole-row replacement: config is exactly what this layer says; `use` is kept unless restated.
        existing.config = spec.config
        existing.disabled = spec.disabled ?? false
        if (spec.use !== undefined) {
          existing.use = spec.use
          existing.baseDir = baseDir
        }
        existing.patchedBy.push(layer.label)
        continue
      }
      if (spec.use === undefined) {
        warnings.push(
          `${layer.label}: patch names unknown row id "${spec.id}"${didYouMean(spec.id, byId.keys())} (no earlier layer inserted it; add "use" to insert a new row); ignored`,
        )
        continue
      }
      const row: EffectiveRow = {
        id: spec.id,
        use: spec.use,
        config: spec.config,
        disabled: spec.disabled ?? false,
        origin: layer.label,
        patchedBy: [],
        baseDir,
      }
      rows.push(row)
      byId.set(row.id, row)
    }
  }
  return { rows, warnings, layers: layers.map(({ kind, label, file }) => ({ kind, label, file })) }
}
