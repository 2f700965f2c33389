// Layers and the patch algorithm: the one code path that both `--dump-config` and boot use.
// Layers apply to an empty row list in order; a row with a known id replaces that row whole (never a
// deep merge), a new id inserts, `disabled: true` keeps the row but stops it from activating.
import { readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import type { ErrorObject } from 'ajv'
import { ConfigExpr, configTags } from './expressions.js'
import rowListValidator from './generated/rows-validator.js'
import { loadYaml } from './lazy.js'

export type LayerKind = 'bundle' | 'profile' | 'home' | 'patch' | 'launcher'

/** A row as a layer file writes it. `use` may be omitted only when patching a known id. */
export interface RowSpec {
  id: string
  use?: string
  config?: unknown
  disabled?: boolean | ConfigExpr
}

export interface Layer {
  kind: LayerKind
  /** Human name used in provenance comments, e.g. `bundle base` or `--patch ./x.yml`. */
  label: string
  /** The file the rows came from, when they came from a file. */
  file?: string
  rows: RowSpec[]
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

/**
 * Validates parsed layer content. Throws `CONFIG_INVALID` listing every problem with its path.
 * An empty document is an empty layer.
 */
export function checkRows(value: unknown, source: string): RowSpec[] {
  if (value === null || value === undefined) return []
  if (!validateRows(value)) {
    const problems = (validateRows.errors ?? []).map((e) => `  - ${e.instancePath || '/'} ${e.message}`)
    throw new HarnessError(
      'CONFIG_INVALID',
      `${source}: not a list of rows { id, use?, config?, disabled? }:\n${problems.join('\n')}`,
      { source, problems },
    )
  }
  const rows = value as RowSpec[]
  const seen = new Set<string>()
  for (const [index, row] of rows.entries()) {
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
  return rows
}

/** Parses YAML layer text (with the config tags). Throws `CONFIG_INVALID` with line numbers. */
export function parseLayerText(text: string, source: string): RowSpec[] {
  const { LineCounter, parseDocument } = loadYaml()
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { customTags: configTags, lineCounter, prettyErrors: true })
  const problems = [...doc.errors, ...doc.warnings]
  if (problems.length > 0) {
    const lines = problems.map((e) => `  - ${e.message.split('\n')[0]}`)
    throw new HarnessError('CONFIG_INVALID', `${source}: invalid YAML:\n${lines.join('\n')}`, { source })
  }
  return checkRows(doc.toJS(), source)
}

/** Reads a layer file. Throws `CONFIG_NOT_FOUND` when missing, `CONFIG_INVALID` when malformed. */
export function readLayer(kind: LayerKind, label: string, file: string): Layer {
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
  return { kind, label, file, rows: parseLayerText(text, file) }
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
          `${layer.label}: patch names unknown row id "${spec.id}" (no earlier layer inserted it; add "use" to insert a new row); ignored`,
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
