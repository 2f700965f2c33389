// Colours of the chat, one place. `NO_COLOR` (or a terminal without colour) gives plain text: every
// style function is then the identity, and meaning is carried by the glyphs and words alone.
import type { EditorTheme, MarkdownTheme, SelectListTheme } from '@mariozechner/pi-tui'
import { Chalk, type ChalkInstance } from 'chalk'

export interface Theme {
  readonly color: boolean
  /** The chalk of this theme's colour level (the code highlighter styles with it). */
  readonly chalk: ChalkInstance
  dim(text: string): string
  bold(text: string): string
  accent(text: string): string
  error(text: string): string
  ok(text: string): string
  warn(text: string): string
  added(text: string): string
  removed(text: string): string
  user(text: string): string
  markdown: MarkdownTheme
  editor: EditorTheme
  select: SelectListTheme
}

/** A theme for a terminal whose colour depth chalk detected; `noColor` forces plain text. */
export function createTheme(noColor: boolean): Theme {
  const chalk = new Chalk(noColor ? { level: 0 } : {})
  const color = chalk.level > 0
  const select: SelectListTheme = {
    selectedPrefix: (text) => chalk.cyan(text),
    selectedText: (text) => chalk.bold(text),
    description: (text) => chalk.dim(text),
    scrollInfo: (text) => chalk.dim(text),
    noMatch: (text) => chalk.dim(text),
  }
  return {
    color,
    chalk,
    dim: (text) => chalk.dim(text),
    bold: (text) => chalk.bold(text),
    accent: (text) => chalk.cyan(text),
    error: (text) => chalk.red(text),
    ok: (text) => chalk.green(text),
    warn: (text) => chalk.yellow(text),
    added: (text) => chalk.green(text),
    removed: (text) => chalk.red(text),
    user: (text) => chalk.bold(text),
    markdown: {
      heading: (text) => chalk.bold.cyan(text),
      link: (text) => chalk.underline(text),
      linkUrl: (text) => chalk.dim(text),
      code: (text) => chalk.yellow(text),
      codeBlock: (text) => chalk.green(text),
      codeBlockBorder: (text) => chalk.dim(text),
      quote: (text) => chalk.italic(text),
      quoteBorder: (text) => chalk.dim(text),
      hr: (text) => chalk.dim(text),
      listBullet: (text) => chalk.cyan(text),
      bold: (text) => chalk.bold(text),
      italic: (text) => chalk.italic(text),
      strikethrough: (text) => chalk.strikethrough(text),
      underline: (text) => chalk.underline(text),
    },
    editor: { borderColor: (text) => chalk.dim(text), selectList: select },
    select,
  }
}
