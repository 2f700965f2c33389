// Text from a session log (a title the first prompt or the model wrote, a cwd) printed to a terminal:
// escape sequences could retitle the window, rewrite earlier lines or hide text, so they go, and so do
// the remaining control characters.

const SEQUENCES = [
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g, // OSC (window title, hyperlinks), ended by BEL or ST
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /\x1b[P^_X][^\x1b]*(?:\x1b\\)?/g, // DCS, PM, APC, SOS strings
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]/g, // CSI (7-bit and the C1 byte)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /\x1b[ -/]*[0-~]/g, // any other escape
]

function withoutSequences(text: string): string {
  let out = text
  for (const pattern of SEQUENCES) out = out.replace(pattern, '')
  return out
}

/** `text` without terminal escape sequences and control characters; whitespace runs become one space. */
export function printable(text: string): string {
  return (
    withoutSequences(text)
      // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
      .replace(/[\x00-\x1f\x7f-\x9f]/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
  )
}

/**
 * Multi-line `text` (a transcript) without terminal escape sequences and control characters: line
 * breaks and tabs stay, a carriage return (which would let a line overwrite what came before it) goes.
 */
export function printableLines(text: string): string {
  return (
    withoutSequences(text)
      .replace(/\r\n/g, '\n')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
      .replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '')
  )
}
