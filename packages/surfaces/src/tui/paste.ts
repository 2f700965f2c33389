// Paste-to-attach: a terminal that drops or pastes an image file gives the chat its path inside
// bracketed-paste markers (quoted, backslash-escaped, or as a file:// URL). When every pasted word is an
// existing image file, the paste becomes attachments of the next message (through SessionHost.prompt,
// the same as `dsh run --attach`) instead of text in the editor.
import { statSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { shellWords } from '@dsh/interaction/words'

const PASTE_START = '\x1b[200~'
const PASTE_END = '\x1b[201~'
const IMAGE = /\.(png|jpe?g|gif|webp)$/i

/** The image files a bracketed paste names, or undefined when it is ordinary text. */
export function pastedImages(data: string, cwd: string): string[] | undefined {
  if (!data.startsWith(PASTE_START) || !data.endsWith(PASTE_END)) return undefined
  const { words } = shellWords(data.slice(PASTE_START.length, -PASTE_END.length).trim())
  if (words.length === 0) return undefined
  const paths: string[] = []
  for (const word of words) {
    const path = word.startsWith('file://') ? safeFileUrl(word) : resolve(cwd, word)
    if (!path || !IMAGE.test(path) || !isFile(path)) return undefined
    paths.push(path)
  }
  return paths
}

function safeFileUrl(url: string): string | undefined {
  try {
    return fileURLToPath(url)
  } catch {
    return undefined
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}
