// A small markdown renderer that builds elements (never HTML strings), so model text cannot inject
// markup: fenced code, headings, lists, quotes, tables, paragraphs; inline code, bold, italic, and
// links only to http(s) and mailto (a `javascript:` target stays text).
import type { ComponentChildren } from 'preact'

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|\[([^\]]+)\]\(((?:https?:\/\/|mailto:)[^\s)]+)\)/g

function inline(text: string): ComponentChildren[] {
  const out: ComponentChildren[] = []
  let last = 0
  for (const match of text.matchAll(INLINE)) {
    const index = match.index ?? 0
    if (index > last) out.push(text.slice(last, index))
    const [whole, code, bold, italic, label, href] = match
    if (code) out.push(<code>{code.slice(1, -1)}</code>)
    else if (bold) out.push(<strong>{bold.slice(2, -2)}</strong>)
    else if (italic) out.push(<em>{italic.slice(1, -1)}</em>)
    else if (label && href)
      out.push(
        <a href={href} target="_blank" rel="noopener noreferrer">
          {label}
        </a>,
      )
    else out.push(whole)
    last = index + whole.length
  }
  if (last < text.length) out.push(text.slice(last))
  return out
}

const KEYWORDS = new Set(
  (
    'as async await break case catch class const continue def default do elif else enum export extends false ' +
    'finally fn for from func function if impl import in interface let match mut new nil None null package pub ' +
    'return self static struct switch this throw true True False try type typeof undefined use var while with yield'
  ).split(' '),
)
const TOKENS =
  /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)|(\b\d[\d_.]*\b)|([A-Za-z_$][\w$]*)/g

/** Light, language-agnostic highlighting: comments, strings, numbers, common keywords. */
export function highlight(code: string, lang: string | undefined): ComponentChildren[] {
  const hashComments = !lang || /^(sh|bash|shell|zsh|py|python|rb|ruby|yaml|yml|toml)$/.test(lang)
  const out: ComponentChildren[] = []
  let last = 0
  for (const match of code.matchAll(TOKENS)) {
    const [whole, comment, string, number, word] = match
    const index = match.index ?? 0
    if (comment?.startsWith('#') && !hashComments) continue
    let cls: string | undefined
    if (comment) cls = 'tok-comment'
    else if (string) cls = 'tok-string'
    else if (number) cls = 'tok-number'
    else if (word && KEYWORDS.has(word)) cls = 'tok-keyword'
    if (!cls) continue
    if (index > last) out.push(code.slice(last, index))
    out.push(<span class={cls}>{whole}</span>)
    last = index + whole.length
  }
  if (last < code.length) out.push(code.slice(last))
  return out
}

/** The cells of a table row: split on `|` not escaped as `\|`, outer pipes dropped. */
function cells(line: string): string[] {
  const inner = line
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '')
  return inner.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, '|'))
}

const TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/

function table(head: string, rule: string, body: string[]): ComponentChildren {
  const align = cells(rule).map((cell) =>
    cell.startsWith(':') && cell.endsWith(':') ? 'center' : cell.endsWith(':') ? 'right' : undefined,
  )
  const columns = cells(head)
  const style = (i: number) => (align[i] ? { textAlign: align[i] } : undefined)
  return (
    <table>
      <thead>
        <tr>
          {columns.map((cell, i) => (
            <th style={style(i)}>{inline(cell)}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {body.map((line) => {
          const row = cells(line)
          return (
            <tr>
              {columns.map((_, i) => (
                <td style={style(i)}>{inline(row[i] ?? '')}</td>
              ))}
            </tr>
          )
        })}
      </tbody>
    </table>
  )
}

export function Markdown({ text }: { text: string }) {
  const lines = text.split('\n')
  const blocks: ComponentChildren[] = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i] as string
    const fence = /^```\s*([\w+-]*)/.exec(line)
    if (fence) {
      const body: string[] = []
      i += 1
      while (i < lines.length && !/^```/.test(lines[i] as string)) body.push(lines[i++] as string)
      i += 1
      blocks.push(
        <pre class="code" data-lang={fence[1] || undefined}>
          <code>{highlight(body.join('\n'), fence[1] || undefined)}</code>
        </pre>,
      )
      continue
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line)
    if (heading) {
      const level = Math.min((heading[1] as string).length + 2, 6)
      const Tag = `h${level}` as 'h3'
      blocks.push(<Tag>{inline(heading[2] as string)}</Tag>)
      i += 1
      continue
    }
    if (/^\s*([-*]|\d+\.)\s+/.test(line)) {
      const ordered = /^\s*\d+\./.test(line)
      const items: ComponentChildren[] = []
      while (i < lines.length && /^\s*([-*]|\d+\.)\s+/.test(lines[i] as string)) {
        items.push(<li>{inline((lines[i] as string).replace(/^\s*([-*]|\d+\.)\s+/, ''))}</li>)
        i += 1
      }
      blocks.push(ordered ? <ol>{items}</ol> : <ul>{items}</ul>)
      continue
    }
    if (line.includes('|') && TABLE_RULE.test(lines[i + 1] ?? '') && (lines[i + 1] as string).includes('-')) {
      const body: string[] = []
      i += 2
      while (i < lines.length && (lines[i] as string).includes('|') && (lines[i] as string).trim())
        body.push(lines[i++] as string)
      blocks.push(table(line, lines[i - body.length - 1] as string, body))
      continue
    }
    if (/^>\s?/.test(line)) {
      const quote: string[] = []
      while (i < lines.length && /^>\s?/.test(lines[i] as string))
        quote.push((lines[i++] as string).replace(/^>\s?/, ''))
      blocks.push(<blockquote>{inline(quote.join(' '))}</blockquote>)
      continue
    }
    if (!line.trim()) {
      i += 1
      continue
    }
    const paragraph: string[] = [line]
    i += 1
    while (
      i < lines.length &&
      (lines[i] as string).trim() &&
      !/^(```|#{1,6}\s|>|\s*([-*]|\d+\.)\s)/.test(lines[i] as string)
    ) {
      paragraph.push(lines[i++] as string)
    }
    blocks.push(<p>{inline(paragraph.join('\n'))}</p>)
  }
  return <div class="md">{blocks}</div>
}
