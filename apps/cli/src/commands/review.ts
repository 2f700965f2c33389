// `dsh review [RANGE] [--diff FILE]`: the `review` preset run headless over a change (a git diff range
// or a pull request's diff file). The findings are read back from the durable session log (each accepted
// `report_finding` call) and printed as Markdown, JSON, or GitHub workflow annotations; `--fail-on`
// turns the worst finding into the exit code, so a CI job can gate on it.
import { execFile } from 'node:child_process'
import { appendFile, readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { promisify } from 'node:util'
import { type Finding, findingsOf, type Severity, severityRank, worstSeverity } from '@dsh/interaction/review'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/session/store/query'
import type { ComposeRequest } from '../config.js'
import { ExitCode, exitCodeForRun } from '../exit-codes.js'
import { checkFolderTrust } from '../folder-trust.js'
import { type Io, readAllText } from '../io.js'
import { withRuntime } from '../runtime.js'
import { modelOf, progressLine, retryLine } from './run.js'

export interface ReviewOptions {
  diff?: string
  output: 'text' | 'json' | 'github'
  failOn?: Severity
  summary?: string
  model?: string
  provider?: string
  cwd?: string
  maxCost?: number
  preset?: string
}

/** Bigger than this, a diff would crowd out the files the review must read: review a narrower range. */
const MAX_DIFF_CHARS = 400_000

async function gitDiff(cwd: string, range: string): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)('git', ['diff', '--no-color', '--no-ext-diff', range, '--'], {
      cwd,
      maxBuffer: 64 * 1024 * 1024,
    })
    return stdout
  } catch (error) {
    const why = String((error as { stderr?: string }).stderr ?? (error as Error).message)
      .trim()
      .split('\n')[0]
    throw new HarnessError(
      'USAGE',
      `cannot diff ${range} in ${cwd}: ${why} (give a range git knows, e.g. origin/main...HEAD, or --diff FILE)`,
      { range },
    )
  }
}

/** The files a unified diff changes, as it names them. */
function changedFiles(diff: string): string[] {
  const files = new Set<string>()
  for (const match of diff.matchAll(/^\+\+\+ b\/(.+)$/gm)) files.add(match[1] as string)
  return [...files]
}

function where(finding: Pick<Finding, 'file' | 'line'>): string {
  return `${finding.file}${finding.line ? `:${finding.line}` : ''}`
}

/** GitHub workflow command escaping: data loses %, CR and LF; property values also `:` and `,`. */
const escapeData = (text: string) => text.replaceAll('%', '%25').replaceAll('\r', '%0D').replaceAll('\n', '%0A')
const escapeProperty = (text: string) => escapeData(text).replaceAll(':', '%3A').replaceAll(',', '%2C')

export function githubAnnotation(finding: Finding): string {
  const command = finding.severity === 'note' ? 'notice' : finding.severity
  const line = finding.line ? `,line=${finding.line}` : ''
  return `::${command} file=${escapeProperty(finding.file)}${line},title=dsh review::${escapeData(finding.message)}`
}

function markdown(subject: string, summary: string, findings: readonly Finding[], footer: string): string {
  const lines = [`## dsh review: ${subject}`, '']
  if (findings.length === 0) lines.push('No findings.')
  else {
    lines.push('| severity | where | finding |', '| --- | --- | --- |')
    for (const finding of findings)
      lines.push(
        `| ${finding.severity} | \`${where(finding)}\` | ${finding.message.replaceAll('|', '\\|').replaceAll('\n', ' ')} |`,
      )
  }
  if (summary.trim()) lines.push('', summary.trim())
  lines.push('', `_${footer}_`, '')
  return lines.join('\n')
}

export async function review(
  request: ComposeRequest,
  range: string | undefined,
  options: ReviewOptions,
  io: Io,
): Promise<number> {
  const cwd = resolve(options.cwd ?? request.cwd ?? process.cwd())
  if (options.diff !== undefined && range !== undefined)
    throw new HarnessError('USAGE', 'give a diff range or --diff FILE, not both', {})
  const subject = options.diff !== undefined ? `diff ${options.diff}` : `git diff ${range ?? 'HEAD'}`
  const diff =
    options.diff === undefined
      ? await gitDiff(cwd, range ?? 'HEAD')
      : options.diff === '-'
        ? await readAllText(io.stdin)
        : await readFile(options.diff, 'utf8').catch((error: NodeJS.ErrnoException) => {
            throw new HarnessError('USAGE', `cannot read the diff ${options.diff}: ${error.code ?? error.message}`, {})
          })
  if (!diff.trim()) {
    io.err(`dsh: ${subject} is empty: nothing to review`)
    if (options.output === 'json') io.out(JSON.stringify({ subject, findings: [], reason: 'empty' }, null, 2))
    return ExitCode.OK
  }
  if (diff.length > MAX_DIFF_CHARS)
    throw new HarnessError(
      'USAGE',
      `${subject} is ${Math.round(diff.length / 1024)} KB, more than a review can hold next to the files it reads (${MAX_DIFF_CHARS / 1000} KB); review a narrower range`,
      {},
    )
  await checkFolderTrust(request, io, { folders: [cwd] })
  const files = changedFiles(diff)
  const task = [
    `Review this change (${subject} in ${cwd}; ${files.length} file${files.length === 1 ? '' : 's'}: ${files.slice(0, 20).join(', ')}${files.length > 20 ? ', ...' : ''}).`,
    'Report each finding with report_finding, then end with a short Markdown summary.',
    '',
    '```diff',
    diff.trimEnd(),
    '```',
  ].join('\n')
  return withRuntime(request, io, async ({ runtime }) => reviewRun(runtime.root, task, subject, cwd, options, io))
}

async function reviewRun(
  root: Context,
  task: string,
  subject: string,
  cwd: string,
  options: ReviewOptions,
  io: Io,
): Promise<number> {
  const headless = root.get('headless')
  if (!headless)
    throw new HarnessError(
      'CONFIG_NO_RUNNER',
      'the profile has no headless runner row (headless-runner); use --profile headless',
      {},
    )
  const progress = io.stderrIsTty
  const result = await headless.run({
    task,
    cwd,
    model: modelOf(options),
    preset: options.preset ?? 'review',
    ...(options.maxCost !== undefined ? { maxCost: options.maxCost } : {}),
    onEvent: (event) => {
      const line = retryLine(event) ?? (progress ? progressLine(event) : undefined)
      if (line) io.err(line)
    },
  })
  const query = root.get('sessionQuery')
  const events = result.durable && query ? (await query.read(result.sessionId)).events : []
  const findings = findingsOf(events)
  const worst = worstSeverity(findings)
  const footer = `session ${result.sessionId} · ${findings.length} finding${findings.length === 1 ? '' : 's'} · cost ${result.cost.text}`
  const page = markdown(subject, result.text ?? '', findings, footer)
  const plain = findings.map(({ file, line, severity, message }) => ({
    file,
    ...(line ? { line } : {}),
    severity,
    message,
  }))
  if (options.output === 'json')
    io.out(
      JSON.stringify(
        {
          subject,
          sessionId: result.sessionId,
          reason: result.reason,
          findings: plain,
          worst: worst ?? null,
          summary: result.text,
          cost: result.cost,
        },
        null,
        2,
      ),
    )
  else if (options.output === 'github') for (const finding of findings) io.out(githubAnnotation(finding))
  else io.out(page)
  if (options.summary) await appendFile(options.summary, page)
  const runCode = exitCodeForRun(result.reason, result.error?.code, result.error?.message)
  if (runCode !== ExitCode.OK) {
    io.err(
      `dsh: the review did not finish (${result.error?.message ?? result.message ?? result.reason}); findings so far: ${findings.length}`,
    )
    return runCode
  }
  if (options.failOn && worst && severityRank(worst) >= severityRank(options.failOn)) {
    io.err(`dsh: worst finding is ${worst} (--fail-on ${options.failOn})`)
    return ExitCode.FINDINGS
  }
  return ExitCode.OK
}
