// How a tool call looks to the editor. ACP requires absolute paths (editors follow locations and diff
// paths to open files), while tools present the model's own argument, often relative to the session's
// workspace; and ACP has one title where tools give a title plus a subtitle, path or command.
import { isAbsolute, relative } from 'node:path'
import type { ToolLocation, ToolPresentation } from '@dsh/agent/tools'

/** Resolves a path the model gave against the session's workspace; undefined when it cannot. */
export type ResolvePath = (path: string) => string | undefined

const MAX_COMMAND = 120

/** The first line of a command, cut to a title's length. */
function commandLine(command: string): string {
  const lines = command.trim().split('\n')
  const first = lines[0] ?? ''
  const cut = first.length > MAX_COMMAND ? `${first.slice(0, MAX_COMMAND - 1)}…` : first
  return lines.length > 1 && cut === first ? `${cut} …` : cut
}

/** The path as a person reads it: relative to the workspace when inside it, else absolute. */
function shown(absolute: string, cwd: string): string {
  const inside = relative(cwd, absolute)
  return inside && !inside.startsWith('..') && !isAbsolute(inside) ? inside : absolute
}

/** `title` followed by what it acts on, unless the tool's title names it already. */
function naming(title: string, subject: string | undefined): string {
  if (!subject || title.includes(subject)) return title
  return `${title} ${subject}`
}

/**
 * The presentation the editor gets: every location and the diff path absolute (a path that does not
 * resolve is dropped), and a title that names the file, the command or the subtitle.
 */
export function editorPresentation(
  presentation: ToolPresentation,
  cwd: string,
  resolvePath: ResolvePath,
): ToolPresentation {
  const locations = presentation.locations?.flatMap((location): ToolLocation[] => {
    const path = resolvePath(location.path)
    return path ? [{ ...location, path }] : []
  })
  const withLocations = locations ? { locations } : {}
  switch (presentation.kind) {
    case 'terminal':
      return { ...presentation, ...withLocations, title: `Run \`${commandLine(presentation.command)}\`` }
    case 'diff': {
      const path = resolvePath(presentation.path)
      // No absolute path, no diff: an editor would open the wrong file.
      if (!path) return { kind: 'generic', title: presentation.title, locations: locations ?? [] }
      return {
        ...presentation,
        ...withLocations,
        path,
        title: naming(presentation.title, shown(path, cwd)),
      }
    }
    default: {
      // A subtitle that is one of the call's paths reads like a diff's path; any other is kept as is.
      const { subtitle } = presentation
      const path =
        subtitle && presentation.locations?.some((l) => l.path === subtitle) ? resolvePath(subtitle) : undefined
      return {
        ...presentation,
        ...withLocations,
        title: naming(presentation.title, path ? shown(path, cwd) : subtitle),
      }
    }
  }
}
