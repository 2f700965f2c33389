// LSP shapes -> the model-facing shapes of index.ts: paths relative to the workspace, 1-based lines.
import { isAbsolute, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  type Diagnostic,
  DiagnosticSeverity,
  type DocumentSymbol,
  type Hover,
  type Location,
  type LocationLink,
  type MarkedString,
  type SymbolInformation,
  SymbolKind,
  type WorkspaceSymbol,
} from 'vscode-languageserver-protocol/node'
import type { LspDiagnostic, LspLocation, LspSeverity, LspSymbol } from './index.js'

const KIND_NAMES = new Map<number, string>(
  Object.entries(SymbolKind).map(([name, value]) => [value, name.toLowerCase()]),
)

/** A file path as the model reads it: relative inside `root`, absolute outside. */
export function displayPath(root: string, uriOrPath: string): string {
  const file = uriOrPath.startsWith('file:') ? fileURLToPath(uriOrPath) : uriOrPath
  const rel = relative(root, file)
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file
}

const SEVERITY: Record<number, LspSeverity> = {
  [DiagnosticSeverity.Error]: 'error',
  [DiagnosticSeverity.Warning]: 'warning',
  [DiagnosticSeverity.Information]: 'info',
  [DiagnosticSeverity.Hint]: 'hint',
}

export function toDiagnostic(root: string, uri: string, item: Diagnostic): LspDiagnostic {
  return {
    path: displayPath(root, uri),
    line: item.range.start.line + 1,
    column: item.range.start.character + 1,
    severity: SEVERITY[item.severity ?? DiagnosticSeverity.Error] ?? 'error',
    message: typeof item.message === 'string' ? item.message : item.message.value,
    ...(item.source === undefined ? {} : { source: item.source }),
    ...(item.code === undefined ? {} : { code: item.code }),
  }
}

export function toLocations(root: string, result: Location | Location[] | LocationLink[] | null): LspLocation[] {
  if (!result) return []
  const list = Array.isArray(result) ? result : [result]
  return list.map((item) => {
    const uri = 'targetUri' in item ? item.targetUri : item.uri
    const range = 'targetUri' in item ? item.targetSelectionRange : item.range
    return { path: displayPath(root, uri), line: range.start.line + 1, column: range.start.character + 1 }
  })
}

function markedText(value: MarkedString): string {
  return typeof value === 'string' ? value : `\`\`\`${value.language}\n${value.value}\n\`\`\``
}

export function hoverText(hover: Hover | null): string | undefined {
  if (!hover) return undefined
  const { contents } = hover
  const text = Array.isArray(contents)
    ? contents.map(markedText).join('\n\n')
    : typeof contents === 'object' && 'kind' in contents
      ? contents.value
      : markedText(contents)
  return text.trim() === '' ? undefined : text.trim()
}

export function toSymbols(
  root: string,
  uri: string,
  result: DocumentSymbol[] | SymbolInformation[] | WorkspaceSymbol[] | null,
): LspSymbol[] {
  const out: LspSymbol[] = []
  const walk = (symbol: DocumentSymbol, container?: string) => {
    out.push({
      name: symbol.name,
      kind: KIND_NAMES.get(symbol.kind) ?? 'symbol',
      path: displayPath(root, uri),
      line: symbol.selectionRange.start.line + 1,
      column: symbol.selectionRange.start.character + 1,
      ...(container === undefined ? {} : { container }),
    })
    for (const child of symbol.children ?? []) walk(child, symbol.name)
  }
  for (const item of result ?? []) {
    if ('selectionRange' in item) walk(item)
    else {
      const location = item.location
      const start = 'range' in location ? location.range.start : { line: 0, character: 0 }
      out.push({
        name: item.name,
        kind: KIND_NAMES.get(item.kind) ?? 'symbol',
        path: displayPath(root, location.uri),
        line: start.line + 1,
        column: start.character + 1,
        ...(item.containerName ? { container: item.containerName } : {}),
      })
    }
  }
  return out
}
