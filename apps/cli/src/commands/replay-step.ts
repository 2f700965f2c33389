// `dsh replay ID --step`: a recorded session one model request at a time, read from its log (nothing
// runs): the exact request the model saw at that step (its config, the system prompt, the tools, the
// messages), the answer, and the tool calls with their results. Keys (a line each, so it also reads a
// script on stdin): Enter or n next, p previous, g N go to step N, s the whole system prompt, t the
// tool schemas, m the messages, q quit.
import { createInterface } from 'node:readline'
import { type SessionStep, sessionSteps, contentText as textOf } from '@dsh/session'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { printable } from '../printable.js'
import { loadOriginal } from './replay.js'
import { isRecord } from './replay-compare.js'

type Step = SessionStep

function clip(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ').trim()
  return one.length > max ? `${one.slice(0, max - 1)}…` : one
}

function describe(step: Step, index: number, count: number): string[] {
  const { request } = step
  const config = isRecord(request.config) ? request.config : {}
  const tools = request.tools.map((tool) => (isRecord(tool) ? String(tool.name) : '?'))
  const last = request.messages.at(-1)
  const lines = [
    `step ${index + 1} of ${count} (event ${request.seq})`,
    `  request: ${String(config.provider ?? '?')}:${String(config.model ?? '?')} · system prompt ${request.system.length.toLocaleString('en-US')} chars · ${tools.length} tools · ${request.messages.length} messages`,
  ]
  if (isRecord(last)) lines.push(`  last message (${String(last.role)}): ${printable(clip(textOf(last.content), 160))}`)
  if (step.answer) lines.push(`  answer: ${printable(clip(step.answer, 240))}`)
  for (const call of step.calls) {
    lines.push(`  call ${call.name} ${printable(clip(call.args, 120))}`)
    if (call.result !== undefined)
      lines.push(`    ${call.error ? 'error' : 'result'}: ${printable(clip(call.result, 160))}`)
  }
  if (!step.answer && step.calls.length === 0) lines.push('  (no answer logged: the session ended here)')
  return lines
}

const KEYS = 'Enter/n next · p previous · g N go to step N · s system prompt · t tools · m messages · q quit'

export async function replayStep(request: ComposeRequest, target: string, io: Io): Promise<number> {
  const original = await loadOriginal(request, target, io)
  const steps = sessionSteps(original.events)
  if (steps.length === 0) {
    io.out(`${original.header.id}: no model request is logged; nothing to step through`)
    return ExitCode.OK
  }
  let at = 0
  const show = () => {
    for (const line of describe(steps[at] as Step, at, steps.length)) io.out(line)
    io.out(`[${KEYS}]`)
  }
  io.out(`session ${original.header.id}: ${steps.length} model requests`)
  show()
  const lines = createInterface({ input: io.stdin, terminal: false })
  for await (const raw of lines) {
    const input = raw.trim()
    const step = steps[at] as Step
    if (input === 'q') break
    if (input === '' || input === 'n') {
      if (at + 1 >= steps.length) io.out('(the last step)')
      else at++
    } else if (input === 'p') {
      if (at === 0) io.out('(the first step)')
      else at--
    } else if (/^g\s*\d+$/.test(input)) {
      const n = Number(input.slice(1).trim())
      if (n < 1 || n > steps.length) {
        io.out(`no step ${n}: the session has steps 1 to ${steps.length}`)
        continue
      }
      at = n - 1
    } else if (input === 's') {
      for (const line of step.request.system.split('\n')) io.out(`  ${printable(line)}`)
      continue
    } else if (input === 't') {
      for (const tool of step.request.tools) io.out(`  ${printable(JSON.stringify(tool))}`)
      continue
    } else if (input === 'm') {
      step.request.messages.forEach((message, index) => {
        const role = isRecord(message) ? String(message.role) : '?'
        const text = isRecord(message) ? textOf(message.content) : ''
        io.out(`  [${index}] ${role}: ${printable(clip(text, 200))}`)
      })
      continue
    } else {
      io.out(`unknown key "${input}": ${KEYS}`)
      continue
    }
    show()
  }
  lines.close()
  return ExitCode.OK
}
