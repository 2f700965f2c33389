// Per-language colours for fenced code blocks. The highlighter (emphasize: highlight.js grammars to
// ANSI) is imported only once the chat is open, so `dsh --help` and the first paint never load it; a
// block rendered before it is ready keeps the one code colour. Without colour nothing is loaded.
import type { ChalkInstance } from 'chalk'
import type { Theme } from './theme.js'

/** Starts loading the highlighter; once loaded, the theme's Markdown highlights code by its language. */
export async function loadCodeHighlighting(theme: Theme): Promise<void> {
  if (!theme.color) return
  const { createEmphasize, common } = await import('emphasize')
  const emphasize = createEmphasize(common)
  const sheet = sheetOf(theme.chalk)
  const fallback = theme.markdown.codeBlock
  theme.markdown.highlightCode = (code, lang) => {
    const language = lang?.trim().split(/\s+/)[0]?.toLowerCase()
    if (language && emphasize.registered(language)) {
      try {
        return emphasize.highlight(language, code, sheet).value.split('\n')
      } catch {
        // A grammar that fails on odd input: the block keeps the plain code colour.
      }
    }
    return code.split('\n').map((line) => fallback(line))
  }
}

/** highlight.js scopes to styles; what is not named here is printed in the terminal's own colour. */
function sheetOf(chalk: ChalkInstance) {
  return {
    keyword: chalk.magenta,
    built_in: chalk.cyan,
    type: chalk.cyan,
    literal: chalk.blue,
    number: chalk.yellow,
    string: chalk.green,
    regexp: chalk.red,
    symbol: chalk.yellow,
    comment: chalk.gray,
    doctag: chalk.gray,
    meta: chalk.gray,
    title: chalk.blue,
    params: chalk.reset,
    attr: chalk.yellow,
    attribute: chalk.yellow,
    variable: chalk.red,
    'template-variable': chalk.red,
    tag: chalk.red,
    name: chalk.red,
    'selector-tag': chalk.red,
    'selector-class': chalk.yellow,
    addition: chalk.green,
    deletion: chalk.red,
    section: chalk.bold.cyan,
    bullet: chalk.cyan,
    emphasis: chalk.italic,
    strong: chalk.bold,
  }
}
