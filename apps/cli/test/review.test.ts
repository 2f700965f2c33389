// `dsh review` as a CI job runs it: a git repository with a change, the review preset headless against
// the mock model, the findings read back from the durable session log and printed as JSON, GitHub
// annotations and a Markdown step summary; `--fail-on` turns the worst finding into exit 15. Also
// `dsh run --task-file --summary` (the issue-fixing job) and the refusals (no change, not a repository).
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { durableEvents, runDsh } from './dsh-child.js'

let root: string
let repo: string
let server: MockLlmServer
const home = () => join(root, 'home')
const dsh = (...args: string[]) => runDsh(args, { home: home(), cwd: repo, modelUrl: server.url })
const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' })

const finding = (id: string, args: Record<string, unknown>) => ({
  id,
  name: 'report_finding',
  arguments: JSON.stringify(args),
})

/** The model's side of one review: two findings, one malformed (refused by the schema), then the summary. */
function scriptReview(): void {
  server.enqueue(
    completionResponse({
      toolCalls: [
        finding('f1', { file: 'src/sum.js', line: 2, severity: 'error', message: 'subtracts instead of adding' }),
        finding('f2', { file: 'src/sum.js', severity: 'note', message: 'name the function, 50%: a, b' }),
        finding('f3', { file: 'src/sum.js', line: 2, severity: 'critical', message: 'not a severity' }),
      ],
    }),
    completionResponse({ text: 'The change breaks `sum`.' }),
  )
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'dsh-review-'))
  repo = join(root, 'repo')
  mkdirSync(join(repo, 'src'), { recursive: true })
  mkdirSync(home())
  server = await startMockLlmServer()
  git('init', '-q', '-b', 'main')
  git('config', 'user.email', 't@example.com')
  git('config', 'user.name', 'T')
  writeFileSync(join(repo, 'src', 'sum.js'), 'export function sum(a, b) {\n  return a + b\n}\n')
  git('add', '.')
  git('commit', '-qm', 'sum')
  writeFileSync(join(repo, 'src', 'sum.js'), 'export function sum(a, b) {\n  return a - b\n}\n')
})
afterAll(async () => {
  await server.close()
  rmSync(root, { recursive: true, force: true })
})

it('reviews the uncommitted change: the model sees the diff and only the review tools; findings come from the log', async () => {
  scriptReview()
  const before = server.requests.length
  const json = await dsh('review', '--output', 'json')
  expect(json.code).toBe(0)
  const out = JSON.parse(json.stdout)
  expect(out.findings).toEqual([
    { file: 'src/sum.js', line: 2, severity: 'error', message: 'subtracts instead of adding' },
    { file: 'src/sum.js', severity: 'note', message: 'name the function, 50%: a, b' },
  ])
  expect(out.worst).toBe('error')
  expect(out.summary).toBe('The change breaks `sum`.')
  // What the model got: the diff in the task, report_finding among read-only tools, nothing that writes.
  const body = (server.requests[before] as RecordedRequest).body as { tools: { function: { name: string } }[] }
  expect(JSON.stringify(body)).toContain('-  return a + b\\n+  return a - b')
  const tools = body.tools.map((tool) => tool.function.name)
  expect(tools).toContain('report_finding')
  expect(tools).not.toContain('write')
  expect(tools).not.toContain('bash')
  // The refused call is in the log as an error result, and is not a finding.
  const results = durableEvents(home()).flatMap((event) => (event.type === 'tool/result' ? [event.data] : []))
  expect(results.map((result) => (result as { message: { isError: boolean } }).message.isError)).toEqual([
    false,
    false,
    true,
  ])
})

it('--fail-on gates on the worst finding; github annotations and the step summary for the job', async () => {
  scriptReview()
  const summary = join(root, 'summary.md')
  const gated = await dsh('review', 'HEAD', '--output', 'github', '--fail-on', 'warning', '--summary', summary)
  expect(gated.code).toBe(ExitCode.FINDINGS)
  expect(gated.stdout.trim().split('\n')).toEqual([
    '::error file=src/sum.js,line=2,title=dsh review::subtracts instead of adding',
    '::notice file=src/sum.js,title=dsh review::name the function, 50%25: a, b',
  ])
  const page = readFileSync(summary, 'utf8')
  expect(page).toContain('## dsh review: git diff HEAD')
  expect(page).toContain('| error | `src/sum.js:2` | subtracts instead of adding |')
  expect(page).toContain('The change breaks `sum`.')

  // A reviewer that finds nothing: --fail-on lets the job pass.
  server.enqueue(completionResponse({ text: 'Looks right.' }))
  const patch = join(root, 'change.patch')
  writeFileSync(patch, git('diff', 'HEAD'))
  const clean = await dsh('review', '--diff', patch, '--fail-on', 'note')
  expect(clean.stderr).toBe('')
  expect(clean.code).toBe(0)
  expect(clean.stdout).toContain('No findings.')
})

it('refuses what it cannot review, asking no model: an empty change, a range git does not know', async () => {
  const before = server.requests.length
  const empty = await dsh('review', 'HEAD~0..HEAD')
  expect(empty.code).toBe(0)
  expect(empty.stderr).toContain('is empty: nothing to review')
  const unknown = await dsh('review', 'no-such-branch...HEAD')
  expect(unknown.code).toBe(ExitCode.USAGE)
  expect(unknown.stderr).toContain('cannot diff no-such-branch...HEAD')
  expect(server.requests.length).toBe(before)
})

it('dsh run --task-file reads the task from an issue body and --summary writes the job summary', async () => {
  const issue = join(root, 'issue.md')
  writeFileSync(issue, '# sum is broken\n\nsum(1, 2) returns -1.\n')
  server.enqueue(completionResponse({ text: 'Fixed `sum`.' }))
  const before = server.requests.length
  const summary = join(root, 'run-summary.md')
  const run = await dsh('run', '--task-file', issue, '--summary', summary, 'Fix this issue:')
  expect(run.code).toBe(0)
  expect(JSON.stringify((server.requests[before] as RecordedRequest).body)).toContain(
    'Fix this issue:\\n\\n# sum is broken\\n\\nsum(1, 2) returns -1.',
  )
  expect(readFileSync(summary, 'utf8')).toMatch(
    /^## dsh run\n\nFixed `sum`\.\n\n_session [0-9a-f-]{36} · completed · cost /,
  )
})
