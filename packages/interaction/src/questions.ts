// `ctx.userQuestions`: questions the model asks a person (the `ask_user` tool), answered by whichever
// surface registered an answerer (web, ACP, RPC, a TUI). Fails closed: no answerer, a throwing
// answerer or an invalid answer is `unavailable`; an aborted signal is `cancelled`.
import { randomUUID } from 'node:crypto'
import { type Context, Service } from '@dsh/kernel'

export interface UserQuestion {
  question: string
  /** Suggested answers; the person may still answer in free text unless the surface forbids it. */
  options?: string[]
  sessionId?: string
  agentId?: string
  toolCallId?: string
}

/** A question as answerers see it: frozen, with an id and a time. */
export interface AskedQuestion extends UserQuestion {
  readonly id: string
  readonly askedAt: number
}

export type UserAnswer =
  | { status: 'answered'; answer: string }
  | { status: 'unavailable'; reason: string }
  | { status: 'cancelled'; reason?: string }

/** A surface's answerer: return the answer text or a full `UserAnswer`. Must stop when `signal` aborts. */
export type QuestionAnswerer = (
  question: Readonly<AskedQuestion>,
  signal: AbortSignal,
) => string | UserAnswer | Promise<string | UserAnswer>

declare module 'cordis' {
  interface Context {
    userQuestions: UserQuestionsService
  }
  interface Events {
    'user-question/asked'(question: Readonly<AskedQuestion>): void
    'user-question/answered'(question: Readonly<AskedQuestion>, answer: UserAnswer): void
  }
}

function normalize(value: unknown): UserAnswer {
  if (typeof value === 'string') return { status: 'answered', answer: value }
  const answer = value as Partial<UserAnswer> | undefined
  if (answer?.status === 'answered' && typeof (answer as { answer?: unknown }).answer === 'string') {
    return { status: 'answered', answer: (answer as { answer: string }).answer }
  }
  if (answer?.status === 'cancelled')
    return { status: 'cancelled', reason: (answer as { reason?: string }).reason ?? 'cancelled' }
  if (answer?.status === 'unavailable') {
    return { status: 'unavailable', reason: (answer as { reason?: string }).reason ?? 'nobody can answer' }
  }
  return { status: 'unavailable', reason: `the answerer gave an invalid answer: ${JSON.stringify(value)}` }
}

export class UserQuestionsService extends Service {
  static readonly provide = 'userQuestions'
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly answerers: QuestionAnswerer[] = []
  readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'userQuestions')
    this.home = ctx
  }

  /** Registers an answerer for the caller's lifetime; the most recent live one is asked. */
  answer(answerer: QuestionAnswerer): () => void {
    return this.ctx.effect(() => {
      this.answerers.push(answerer)
      return () => {
        const index = this.answerers.lastIndexOf(answerer)
        if (index >= 0) this.answerers.splice(index, 1)
      }
    }, 'userQuestions.answer')
  }

  get hasAnswerer(): boolean {
    return this.answerers.length > 0
  }

  /** Asks the newest answerer. Never throws: failures are `unavailable`, an abort `cancelled`. */
  async ask(question: UserQuestion, signal?: AbortSignal): Promise<UserAnswer> {
    const asked: AskedQuestion = Object.freeze({ ...question, id: randomUUID(), askedAt: Date.now() })
    this.home.emit('user-question/asked', asked)
    const answer = await this.resolve(asked, signal)
    this.home.emit('user-question/answered', asked, answer)
    return answer
  }

  private async resolve(asked: AskedQuestion, signal: AbortSignal | undefined): Promise<UserAnswer> {
    const answerer = this.answerers.at(-1)
    if (!answerer) return { status: 'unavailable', reason: 'no surface can answer questions in this session' }
    if (signal?.aborted) return { status: 'cancelled', reason: 'the question was cancelled' }
    const local = new AbortController()
    let onAbort = () => {}
    const cancelled = new Promise<UserAnswer>((resolve) => {
      onAbort = () => resolve({ status: 'cancelled', reason: 'the question was cancelled' })
      signal?.addEventListener('abort', onAbort, { once: true })
    })
    try {
      return await Promise.race([
        Promise.resolve()
          .then(() => answerer(asked, local.signal))
          .then(normalize, (error: unknown) => ({
            status: 'unavailable' as const,
            reason: `the answerer failed: ${error instanceof Error ? error.message : String(error)}`,
          })),
        cancelled,
      ])
    } finally {
      signal?.removeEventListener('abort', onAbort)
      // Releases a still-waiting answerer: it must not act on a settled question.
      local.abort()
    }
  }
}

export default UserQuestionsService
