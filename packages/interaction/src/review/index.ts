// @dsh/interaction/review: what a code review reports, as facts in the session log. The `report_finding`
// tool (opt-in: only the `review` preset offers it) takes one finding (file, line, severity, message),
// checked by its schema, and `findingsOf` derives the accepted findings from the log: each
// `report_finding` call whose result was not an error. `dsh review` prints them as annotations.
import { defineTool, ToolError } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import { type AnySessionEvent, isEvent } from '@dsh/session'

export const SEVERITIES = ['error', 'warning', 'note'] as const
export type Severity = (typeof SEVERITIES)[number]

export interface Finding {
  file: string
  /** 1-based line in the new version of the file; absent for a finding about the whole file. */
  line?: number
  severity: Severity
  message: string
  /** Seq of the logged call. */
  seq: number
}

/** Rank of a severity: error 3, warning 2, note 1. */
export function severityRank(severity: Severity): number {
  return SEVERITIES.length - SEVERITIES.indexOf(severity)
}

/** The worst severity among `findings`, or undefined for none. */
export function worstSeverity(findings: readonly Finding[]): Severity | undefined {
  let worst: Severity | undefined
  for (const finding of findings)
    if (!worst || severityRank(finding.severity) > severityRank(worst)) worst = finding.severity
  return worst
}

interface Args {
  file: string
  line?: number
  severity: Severity
  message: string
}

/** The findings the log records: `report_finding` calls whose result was not an error, in log order. */
export function findingsOf(events: readonly AnySessionEvent[]): Finding[] {
  const calls = new Map<string, { args: Record<string, unknown>; seq: number }>()
  const findings: Finding[] = []
  for (const event of events) {
    if (isEvent(event, 'tool/call') && event.data.call.name === 'report_finding')
      calls.set(event.data.call.id, { args: event.data.call.arguments, seq: event.seq })
    else if (isEvent(event, 'tool/result') && event.data.message.toolName === 'report_finding') {
      const call = calls.get(event.data.message.toolCallId)
      if (!call || event.data.message.isError) continue
      const { file, line, severity, message } = call.args
      if (typeof file !== 'string' || typeof message !== 'string' || !SEVERITIES.includes(severity as Severity))
        continue
      findings.push({
        file,
        ...(typeof line === 'number' ? { line } : {}),
        severity: severity as Severity,
        message,
        seq: call.seq,
      })
    }
  }
  return findings
}

export function createReportFindingTool() {
  return defineTool<Args>({
    name: 'report_finding',
    description: [
      'Report one review finding about the change under review: a bug, a risk, or something to improve.',
      'Call it once per finding, then end with a short Markdown summary of the review.',
      'file: the path as the diff names it (without a/ or b/); line: the line in the new version of the file',
      '(omit for the whole file); severity: error (must be fixed before merging), warning (should be fixed),',
      'note (a suggestion); message: what is wrong and how to fix it, in one or two sentences.',
    ].join(' '),
    parameters: {
      type: 'object',
      properties: {
        file: { type: 'string', minLength: 1 },
        line: { type: 'integer', minimum: 1 },
        severity: { type: 'string', enum: [...SEVERITIES] },
        message: { type: 'string', minLength: 1 },
      },
      required: ['file', 'severity', 'message'],
      additionalProperties: false,
    },
    optIn: true,
    readOnly: true,
    mode: 'parallel-safe',
    presentation: (args) => ({
      kind: 'generic',
      title: `${args.severity}: ${args.file}${args.line ? `:${args.line}` : ''}`,
      subtitle: args.message,
    }),
    execute(args) {
      if (args.file.startsWith('/') || args.file.split('/').includes('..'))
        throw new ToolError(
          `file must be a path inside the repository as the diff names it, not ${args.file}`,
          'INVALID_FINDING',
        )
      return `recorded ${args.severity} at ${args.file}${args.line ? `:${args.line}` : ''}`
    },
  })
}

/** The tool row: registers `report_finding` (offered only where a preset allows it by name). */
export default {
  name: 'review-tools',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register(createReportFindingTool())
  },
}
