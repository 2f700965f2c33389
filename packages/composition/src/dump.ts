// `--dump-config`: the effective tree as YAML, each row preceded by a comment naming the layer that
// inserted it and every later layer that patched it. The output is itself a valid layer file.
import { configTags } from './expressions.js'
import type { EffectiveTree } from './layers.js'
import { loadYaml } from './lazy.js'

export interface DumpOptions {
  /** First comment lines, e.g. the profile name. */
  title?: string
}

export function dumpTree(tree: EffectiveTree, options: DumpOptions = {}): string {
  const plain = tree.rows.map((row) => {
    const out: Record<string, unknown> = { id: row.id, use: row.use }
    if (row.config !== undefined) out.config = row.config
    if (row.disabled !== false) out.disabled = row.disabled
    return out
  })
  const { Document, isMap, isSeq } = loadYaml()
  const doc = new Document(plain, { customTags: configTags })
  const header = [
    options.title,
    'layers, in order:',
    ...tree.layers.map((l) => `  ${l.label}${l.file ? ` (${l.file})` : ''}`),
  ]
  header.push(...tree.warnings.map((w) => `warning: ${w}`))
  doc.commentBefore = header
    .filter((line): line is string => line !== undefined)
    .map((line) => ` ${line}`)
    .join('\n')
  if (isSeq(doc.contents)) {
    doc.contents.items.forEach((item, index) => {
      const row = tree.rows[index]
      if (!row || !isMap(item)) return
      const patched = row.patchedBy.length ? `; patched by ${row.patchedBy.join(', then ')}` : ''
      item.commentBefore = ` from ${row.origin}${patched}`
    })
  }
  return doc.toString({ lineWidth: 0 })
}
