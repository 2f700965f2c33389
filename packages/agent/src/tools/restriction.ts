// Tool restrictions: allow and deny lists of tool names or globs (`*` any run of characters, `?` one),
// as presets and subagent filters write them. A scope may carry several; a tool must pass all of them.
import type { ToolRestriction } from './types.js'

const compiled = new Map<string, RegExp>()

/** Whether `name` matches `pattern`: the exact name, or a glob with `*` and `?`. */
export function matchesToolPattern(name: string, pattern: string): boolean {
  if (!pattern.includes('*') && !pattern.includes('?')) return name === pattern
  let regex = compiled.get(pattern)
  if (!regex) {
    const source = pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')
    regex = new RegExp(`^${source}$`)
    if (compiled.size > 256) compiled.clear()
    compiled.set(pattern, regex)
  }
  return regex.test(name)
}

/** Whether `name` passes one restriction: in `allow` (when given) and not in `deny`. */
export function permitted(name: string, restriction: ToolRestriction): boolean {
  if (restriction.allow && !restriction.allow.some((pattern) => matchesToolPattern(name, pattern))) return false
  return !restriction.deny?.some((pattern) => matchesToolPattern(name, pattern))
}

/** Whether `name` passes every restriction (true for none). */
export function permittedAll(name: string, restrictions: readonly ToolRestriction[] | undefined): boolean {
  return (restrictions ?? []).every((restriction) => permitted(name, restriction))
}

/** Whether a restriction names `name` exactly in its allow list (how an opt-in tool is let in). */
export function namedExactly(name: string, restrictions: readonly ToolRestriction[] | undefined): boolean {
  return (restrictions ?? []).some((restriction) => restriction.allow?.includes(name) === true)
}
