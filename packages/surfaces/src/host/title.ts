// A title a person gives a session: one line, bounded, logged as `session/title` (`by: 'user'`).
import { type Context, HarnessError } from '@dsh/kernel'

/** Longest title a person may give (the model's are shorter). */
const MAX_TITLE = 120

/** `title` on one line; throws `INVALID_TITLE`, or `NOT_AVAILABLE` when no row declares `session/title`. */
export function checkTitle(ctx: Context, title: string): string {
  const clean = title.replace(/\s+/g, ' ').trim()
  if (!clean || clean.length > MAX_TITLE)
    throw new HarnessError('INVALID_TITLE', `a title is 1 to ${MAX_TITLE} characters, got ${clean.length}`, {})
  if (!ctx.sessions.vocabulary.has('session/title'))
    throw new HarnessError(
      'NOT_AVAILABLE',
      'renaming logs a session/title event, which the session-title row declares; enable that row',
      {},
    )
  return clean
}
