// Splits a command's argument text into words: whitespace separates, single or double quotes keep a
// word together (`/loop "fix the test" --until "npm test"`), a backslash escapes the next character.
import { HarnessError } from '@dsh/kernel'

export function splitArgs(text: string): string[] {
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
  if (quote) throw new HarnessError('COMMAND_USAGE', `unclosed ${quote} quote in "${text}"`, {})
  if (started) words.push(word)
  return words
}
