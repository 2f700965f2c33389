// Step through a session (issue 37): its model requests one at a time, read from the log on the host
// (`session/steps`, nothing runs). Each step shows the model, the prompt's size, the tools and the last
// message the model read, then the answer and the tool calls with their results; "the exact request"
// opens the system prompt, the tool schemas and every message as sent (`session/step`).
import type { StepResult, StepSummaryView, StepsResult } from '@dsh/surfaces/wire'
import { useEffect, useState } from 'preact/hooks'
import { api } from '../connection'
import { failed } from '../host-state'

function text(value: unknown): string {
  if (typeof value === 'string') return value
  if (!Array.isArray(value)) return ''
  return value
    .map((block) => (typeof block?.text === 'string' ? block.text : block?.type ? `[${String(block.type)}]` : ''))
    .join('')
}

function ExactRequest({ sessionId, index }: { sessionId: string; index: number }) {
  const [step, setStep] = useState<StepResult | undefined>()
  useEffect(() => {
    setStep(undefined)
    void api<StepResult>('GET', `/api/sessions/${encodeURIComponent(sessionId)}/step?index=${index}`)
      .then(setStep)
      .catch(failed)
  }, [sessionId, index])
  if (!step) return <p class="dim">reading the request…</p>
  return (
    <div class="exact-request">
      <details open>
        <summary>system prompt ({step.system.length.toLocaleString('en-US')} characters)</summary>
        <pre class="system-prompt">{step.system}</pre>
      </details>
      <details>
        <summary>tool schemas ({step.tools.length})</summary>
        <pre class="tool-schemas">{JSON.stringify(step.tools, null, 2)}</pre>
      </details>
      <details open>
        <summary>messages ({step.messages.length})</summary>
        <ol class="step-messages" start={0}>
          {step.messages.map((message, position) => {
            const record = (message ?? {}) as { role?: unknown; content?: unknown }
            return (
              <li key={position}>
                <b>{String(record.role ?? '?')}</b>: {text(record.content)}
              </li>
            )
          })}
        </ol>
      </details>
    </div>
  )
}

function StepCard({ step, count }: { step: StepSummaryView; count: number }) {
  return (
    <section class="step" aria-label={`step ${step.index + 1}`}>
      <h3>
        Step {step.index + 1} of {count} <span class="dim">(event {step.seq})</span>
      </h3>
      <p class="step-request">
        {step.model} · system prompt {step.systemChars.toLocaleString('en-US')} characters · {step.tools.length} tools ·{' '}
        {step.messages} messages
      </p>
      {step.last ? (
        <p class="step-last">
          last message ({step.last.role}): {step.last.text}
        </p>
      ) : null}
      {step.answer ? <p class="step-answer">answer: {step.answer}</p> : null}
      {step.calls.map((call) => (
        <div class="step-call" key={call.id}>
          <code class="step-call-args">
            {call.name} {call.args}
          </code>
          {call.result !== undefined ? (
            <pre class={call.error ? 'step-result error' : 'step-result'}>{call.result}</pre>
          ) : null}
        </div>
      ))}
    </section>
  )
}

export function StepsView({ sessionId }: { sessionId: string }) {
  const [steps, setSteps] = useState<StepSummaryView[] | undefined>()
  const [at, setAt] = useState(0)
  const [exact, setExact] = useState(false)
  useEffect(() => {
    void api<StepsResult>('GET', `/api/sessions/${encodeURIComponent(sessionId)}/steps`)
      .then((answer) => setSteps(answer.steps))
      .catch(failed)
  }, [sessionId])
  if (!steps) return <main class="steps">reading the session…</main>
  const step = steps[at]
  return (
    <main class="steps">
      <header class="steps-head">
        <a class="link" href={`#/s/${sessionId}`}>
          back to the session
        </a>
        <span>
          {sessionId.slice(0, 8)}: {steps.length} model requests
        </span>
        <button type="button" disabled={at === 0} onClick={() => setAt(at - 1)}>
          previous
        </button>
        <label>
          step{' '}
          <select aria-label="step" value={String(at)} onChange={(e) => setAt(Number(e.currentTarget.value))}>
            {steps.map((candidate) => (
              <option key={candidate.index} value={String(candidate.index)}>
                {candidate.index + 1}
              </option>
            ))}
          </select>
        </label>
        <button type="button" disabled={at >= steps.length - 1} onClick={() => setAt(at + 1)}>
          next
        </button>
        <label>
          <input type="checkbox" checked={exact} onChange={(e) => setExact(e.currentTarget.checked)} /> the exact
          request
        </label>
      </header>
      {step ? <StepCard step={step} count={steps.length} /> : <p>No model request is logged in this session.</p>}
      {step && exact ? <ExactRequest sessionId={sessionId} index={at} /> : null}
    </main>
  )
}
