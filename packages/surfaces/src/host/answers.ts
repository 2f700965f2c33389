// The approvals and `ask_user` questions a host holds for its client: registered as the answerer of
// `ctx.approval` and `ctx.userQuestions`, each question waits until the client answers, the asking
// turn aborts, or the host closes. A host with nobody to ask (a headless run) answers approvals itself.
import type { ApprovalAnswer, ApprovalAnswerer, ApprovalQuestion } from '@dsh/agent/approval'
import type { AskedQuestion, UserAnswer } from '@dsh/interaction'
import type { Context } from '@dsh/kernel'
import { type Pending, PendingRegistry } from './pending.js'

/** How a held `ask_user` question ends: the person answered, or the turn or the host went away. */
export type QuestionOutcome = Extract<UserAnswer, { status: 'answered' | 'cancelled' }>

export interface AnswersOptions {
  /** Hold approvals for the client (true), leave them to another answerer (false), or answer them with this. */
  approvals: boolean | ApprovalAnswerer
  /** Hold `ask_user` questions for the client. */
  questions: boolean
  approvalRequested?(pending: Pending<ApprovalQuestion>): void
  approvalSettled?(requestId: string, answer: ApprovalAnswer): void
  questionRequested?(pending: Pending<AskedQuestion>): void
  questionSettled?(questionId: string, answer: QuestionOutcome): void
}

export class HostAnswers {
  private readonly approvals: PendingRegistry<ApprovalQuestion, ApprovalAnswer>
  private readonly questions: PendingRegistry<AskedQuestion, QuestionOutcome>

  constructor(
    private readonly ctx: Context,
    private readonly options: AnswersOptions,
  ) {
    this.approvals = new PendingRegistry('approval', (id, answer) => options.approvalSettled?.(id, answer))
    this.questions = new PendingRegistry('question', (id, answer) => options.questionSettled?.(id, answer))
  }

  /** Registers the answerers; the returned disposers unregister them. */
  register(): Array<() => void> {
    const disposers: Array<() => void> = []
    const approval = this.ctx.get('approval')
    const answerer = this.options.approvals
    if (approval && typeof answerer === 'function') disposers.push(approval.answer(answerer))
    else if (approval && answerer) {
      disposers.push(
        approval.answer((question, signal) =>
          this.approvals.ask(question.requestId, question, signal, { decision: 'cancelled' }, (pending) =>
            this.options.approvalRequested?.(pending),
          ),
        ),
      )
    }
    const questions = this.ctx.get('userQuestions')
    if (questions && this.options.questions) {
      disposers.push(
        questions.answer((question, signal) =>
          this.questions.ask(
            question.id,
            question,
            signal,
            { status: 'cancelled', reason: 'the turn was cancelled' },
            (pending) => this.options.questionRequested?.(pending),
          ),
        ),
      )
    }
    return disposers
  }

  /** Whether `ask_user` questions are held here (a `ctx.userQuestions` row is loaded and this host answers). */
  get holdsQuestions(): boolean {
    return Boolean(this.ctx.get('userQuestions')) && this.options.questions
  }

  pendingApprovals(): Pending<ApprovalQuestion>[] {
    return this.approvals.list()
  }

  /** Answers a pending approval; the first answer wins. Throws `APPROVAL_NOT_FOUND`. */
  respond(requestId: string, answer: ApprovalAnswer): void {
    this.approvals.settle(requestId, answer)
  }

  pendingQuestions(): Pending<AskedQuestion>[] {
    return this.questions.list()
  }

  /** Answers a pending `ask_user` question; the first answer wins. Throws `QUESTION_NOT_FOUND`. */
  answer(questionId: string, answer: string): void {
    this.questions.settle(questionId, { status: 'answered', answer })
  }

  /** Cancels everything still waiting (the host is closing). */
  cancelAll(reason: string): void {
    this.approvals.settleAll({ decision: 'cancelled' })
    this.questions.settleAll({ status: 'cancelled', reason })
  }
}
