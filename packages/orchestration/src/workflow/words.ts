// A command's argument text as words (see @dsh/interaction/words); an unclosed quote is a usage error.

import { shellWords } from '@dsh/interaction/words'
import { HarnessError } from '@dsh/kernel'

export function splitArgs(text: string): string[] {
  const { words, unclosed } = shellWords(text)
  if (unclosed) throw new HarnessError('COMMAND_USAGE', `unclosed ${unclosed} quote in "${text}"; close it`, {})
  return words
}
