// Shell-like words, as slash commands take their arguments (`/loop "fix the test" --until "npm test"`)
// and as terminals paste dropped file paths ('…' quoted or backslash-escaped): whitespace separates,
// '…' keeps everything literally, "…" keeps a word together, a backslash escapes the next character
// outside single quotes. No expansion of any kind.

export interface ShellWords {
  words: string[]
  /** The quote left open at the end of the text, if any (its word is in `words` all the same). */
  unclosed?: '"' | "'"
}

export function shellWords(text: string): ShellWords {
  const words: string[] = []
  let word = ''
  let quote: '"' | "'" | undefined
  let started = false
  for (let index = 0; index < text.length; index++) {
    const char = text[index] as string
    if (char === '\\' && quote !== "'" && index + 1 < text.length) {
      word += text[++index]
      started = true
    } else if (quote) {
      if (char === quote) quote = undefined
      else word += char
    } else if (char === '"' || char === "'") {
      quote = char
      started = true
    } else if (/\s/.test(char)) {
      if (started) words.push(word)
      word = ''
      started = false
    } else {
      word += char
      started = true
    }
  }
  if (started) words.push(word)
  return quote ? { words, unclosed: quote } : { words }
}
