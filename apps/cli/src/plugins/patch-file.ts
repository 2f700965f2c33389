// The bundle references (`- bundle: NAME`) of a patch file, edited in place: comments, other rows and
// their config tags (`!env`) are kept, and the result must still parse as a layer file.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { configTags, isBundleRef, parseLayerEntries } from '@dsh/composition'
import { Document, isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml'

export interface NamedBundle {
  bundle: string
  enabled: boolean
}

const HEADER =
  ' Rows and bundles applied to every profile after its own patch (dsh --dump-config shows the result).\n' +
  ' `dsh plugin add NAME` adds `- bundle: NAME`; `disabled: true` keeps a plugin installed but out.'

/** The bundles a patch file names, in order (none when the file does not exist). */
export function namedBundles(file: string): NamedBundle[] {
  if (!existsSync(file)) return []
  return parseLayerEntries(readFileSync(file, 'utf8'), file)
    .filter(isBundleRef)
    .map((ref) => ({ bundle: ref.bundle, enabled: ref.disabled !== true }))
}

function edit(file: string, change: (seq: YAMLSeq, doc: Document) => boolean): boolean {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : ''
  parseLayerEntries(text, file) // refuse to edit a file that is already broken, naming why
  const parsed = parseDocument(text, { customTags: configTags })
  let doc: Document = parsed
  if (!isSeq(parsed.contents)) {
    // Empty or comment-only: a fresh list, keeping what the file said.
    doc = new Document([], { customTags: configTags })
    doc.commentBefore = parsed.commentBefore ?? parsed.comment ?? (text.trim() === '' ? HEADER : null)
  }
  if (!isSeq(doc.contents) || !change(doc.contents, doc)) return false
  const next = doc.toString({ lineWidth: 0 })
  parseLayerEntries(next, file)
  writeFileSync(file, next)
  return true
}

const names = (item: unknown, bundle: string): item is YAMLMap => isMap(item) && item.get('bundle') === bundle

/**
 * Names `bundle` in the patch (enabling it if it was named disabled), with the shipped rows the user
 * confirmed it may replace (`replaces`, set anew each add). False when nothing changed.
 */
export function addBundle(file: string, bundle: string, replaces: readonly string[] = []): boolean {
  return edit(file, (seq, doc) => {
    const named = seq.items.filter((item) => names(item, bundle))
    if (named.length === 0) {
      seq.add(doc.createNode(replaces.length > 0 ? { bundle, replaces: [...replaces] } : { bundle }))
      return true
    }
    let changed = false
    for (const item of named) {
      if (item.has('disabled')) {
        item.delete('disabled')
        changed = true
      }
      const before = JSON.stringify(item.get('replaces') ?? [])
      if (replaces.length > 0) item.set('replaces', doc.createNode([...replaces]))
      else item.delete('replaces')
      changed ||= before !== JSON.stringify(replaces)
    }
    return changed
  })
}

/** Drops every reference to `bundle` from the patch. False when it named none. */
export function removeBundle(file: string, bundle: string): boolean {
  if (!existsSync(file)) return false
  return edit(file, (seq) => {
    const before = seq.items.length
    seq.items = seq.items.filter((item) => !names(item, bundle))
    return seq.items.length < before
  })
}
