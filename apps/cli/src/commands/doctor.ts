// `dsh doctor`: what works on this machine and what to do about what does not: Node, the sandbox
// (mechanism, why it is unusable, the fix), the SQLite engine, process containment, the default model's provider (its key
// and endpoint) and every configured endpoint, the web search provider, and
// which of this folder's configuration waits for `dsh trust`.
import type {} from '@dsh/coding-tools/web-search'
import type {} from '@dsh/llm'
import type {} from '@dsh/session/store'
import { projectTrust } from '@dsh/settings/trust'
import type {} from '@dsh/world/sandbox'
import type {} from '@dsh/world/subprocess'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { type RuntimeScope, withRuntime } from '../runtime.js'

interface Check {
  name: string
  ok: boolean
  detail: string
  fix?: string
}

/** The fix for a sandbox that cannot be used, from bubblewrap's own complaint. */
function sandboxFix(detail: string): string {
  if (/not installed|ENOENT/.test(detail)) return 'install bubblewrap (Debian/Ubuntu: apt install bubblewrap)'
  if (/namespace|Operation not permitted|Permission denied/i.test(detail)) {
    return 'allow unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1 (Debian), or kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04+); in a container, run it with user namespaces enabled. Until then bash asks before each command.'
  }
  if (/macOS|darwin/i.test(detail)) return 'on macOS, patch the sandbox row to use "@dsh/world/sandbox/seatbelt"'
  return 'see packages/world/README.md (Platforms)'
}

async function endpointCheck(name: string, url: string, fix: string): Promise<Check> {
  try {
    const response = await fetch(url, { method: 'GET', signal: AbortSignal.timeout(5000) })
    await response.body?.cancel()
    return { name, ok: true, detail: `${url} answers (HTTP ${response.status})` }
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message
    return { name, ok: false, detail: `${url} cannot be reached: ${cause}`, fix }
  }
}

/**
 * The default model's provider (its key and endpoint) and every configured OpenAI-compatible
 * endpoint: what a run will use, not a fixed provider.
 */
async function modelChecks(runtime: RuntimeScope['runtime']): Promise<Check[]> {
  const checks: Check[] = []
  const llm = runtime.root.get('llm')
  if (!llm) return [{ name: 'model', ok: false, detail: 'no llm row in this profile', fix: 'add the llm row' }]
  let call: { provider: string; model: string }
  try {
    call = llm.resolveCall({})
  } catch (error) {
    return [{ name: 'model', ok: false, detail: (error as Error).message, fix: 'dsh config set model PROVIDER:MODEL' }]
  }
  const named = `${call.provider}:${call.model || '(its default)'}`
  if (!llm.providers().includes(call.provider)) {
    return [
      {
        name: 'model',
        ok: false,
        detail: `the default model ${named} names provider "${call.provider}", which no row serves`,
        fix: `dsh config set model PROVIDER:MODEL (providers: ${llm.providers().join(', ')}; dsh models lists them)`,
      },
    ]
  }
  checks.push({ name: 'model', ok: true, detail: `default model ${named}` })
  const access = await llm.access(call.provider, call.model)
  if (access?.error) {
    checks.push({ name: 'endpoint', ok: false, detail: access.error, fix: 'dsh config set model PROVIDER:MODEL' })
  } else if (access) {
    const names = access.keyNames.join(' or ')
    if (access.key) checks.push({ name: 'key', ok: true, detail: `${access.key.name} from ${access.key.location}` })
    else if (access.keyRequired)
      checks.push({
        name: 'key',
        ok: false,
        detail: `${names} is not set`,
        fix: `set ${names} in the environment, with dsh config set ${access.keyNames.at(-1)} KEY, $DSH_HOME/.credentials.yaml or .env`,
      })
    else
      checks.push({ name: 'key', ok: true, detail: `${call.provider} needs no key${names ? ` (${names} unset)` : ''}` })
    if (access.url)
      checks.push(
        await endpointCheck(
          'endpoint',
          access.url,
          `check ${access.urlVariable ? `${access.urlVariable}, ` : ''}the network and any proxy`,
        ),
      )
  }
  const settings = runtime.root.get('settings')
  // The `endpoints` setting of the openai-compatible row (not imported: a consumer never imports a provider).
  const endpoints =
    ((settings?.has('endpoints') ? settings.resolve('endpoints').value : undefined) as
      | Record<string, { baseUrl: string }>
      | undefined) ?? {}
  for (const [name, entry] of Object.entries(endpoints)) {
    if (access?.url === entry.baseUrl) continue
    checks.push(
      await endpointCheck(
        `endpoint ${name}`,
        entry.baseUrl,
        `check endpoints.${name}.baseUrl (dsh config set endpoints.${name}.baseUrl URL), the server and any proxy`,
      ),
    )
  }
  return checks
}

/** Which SQLite engine the SQLite store and session search would use; a failure only when the store is SQLite. */
async function sqliteCheck(runtime: RuntimeScope['runtime']): Promise<Check> {
  const { sqliteEngine } = await import('@dsh/session/store/sqlite-driver')
  const engine = sqliteEngine()
  if (engine) return { name: 'sqlite', ok: true, detail: `${engine} (the SQLite session store and session search)` }
  const store = runtime.root.get('settings')?.get('session.store') ?? 'jsonl'
  return {
    name: 'sqlite',
    ok: store !== 'sqlite',
    detail: `none: Node ${process.versions.node} has no node:sqlite and better-sqlite3 is not installed${store === 'sqlite' ? ', and session.store is sqlite' : ' (the default JSONL store needs neither)'}`,
    ...(store === 'sqlite'
      ? { fix: 'run dsh on Node 22.13 or later, or npm install -g better-sqlite3@12 beside a global dsh' }
      : {}),
  }
}

export async function doctor(request: ComposeRequest, io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const checks: Check[] = []
    const major = Number(process.versions.node.split('.')[0])
    checks.push({
      name: 'node',
      ok: major >= 20,
      detail: `Node ${process.versions.node}`,
      ...(major >= 20 ? {} : { fix: 'install Node 20 or newer' }),
    })
    checks.push(await sqliteCheck(runtime))
    const sandbox = runtime.root.get('sandbox')
    if (sandbox) {
      const available = await sandbox.availability()
      checks.push({
        name: 'sandbox',
        ok: available.usable,
        detail: available.usable ? `${sandbox.mechanism} (${available.detail})` : available.detail,
        ...(available.usable ? {} : { fix: sandboxFix(available.detail) }),
      })
    } else
      checks.push({ name: 'sandbox', ok: false, detail: 'no sandbox row in this profile', fix: 'add the sandbox row' })
    const subprocess = runtime.root.get('subprocess')
    if (subprocess) {
      const contained = await subprocess.containment()
      checks.push({
        name: 'containment',
        ok: contained.mechanism === 'pid-namespace',
        detail: `${contained.mechanism}: ${contained.detail}`,
        ...(contained.mechanism === 'pid-namespace'
          ? {}
          : { fix: 'with a usable bubblewrap every tool process tree dies with dsh, even on SIGKILL' }),
      })
    }
    checks.push(...(await modelChecks(runtime)))
    const search = runtime.root.get('webSearch')
    if (search) {
      const registered = search.providers()
      const problems = search.unavailable()
      if (problems.length > 0)
        for (const problem of problems)
          checks.push({
            name: 'web search',
            ok: false,
            detail: problem.why,
            fix: 'give it what it names, or choose another: dsh config set webSearch.provider searxng|brave|tavily|exa',
          })
      else
        checks.push({
          name: 'web search',
          ok: true,
          detail:
            registered.length > 0
              ? `web_search through ${registered.join(', ')}`
              : 'off: no provider chosen (dsh config set webSearch.provider searxng|brave|tavily|exa)',
        })
    }
    // Not a failure: an untrusted folder is the safe default. Said here because "my .mcp.json does
    // nothing" is the question it answers.
    const folder = request.cwd ?? process.cwd()
    const trust = projectTrust(runtime.root)
    const pending = trust.pending(folder)
    const ignored = runtime.root.get('settings')?.ignoredProjectKeys() ?? []
    const keys = ignored.length > 0 ? ` (settings not applied: ${ignored.join(', ')})` : ''
    const damaged = trust.damaged
    if (damaged)
      checks.push({
        name: 'trust file',
        ok: false,
        detail: damaged,
        fix: `remove ${trust.file}, then run \`dsh trust\` in each folder you trust`,
      })
    checks.push({
      name: 'trust',
      ok: true,
      detail:
        pending.length === 0
          ? `${folder}: nothing here needs trust${trust.record(folder) ? ' (trusted)' : ''}`
          : `${folder}: not loaded until trusted: ${pending.map((item) => item.path).join(', ')}${keys}`,
      ...(pending.length === 0 ? {} : { fix: 'review them, then run `dsh trust` (or pass --trust for one run)' }),
    })
    for (const check of checks) {
      io.out(`${check.ok ? 'ok  ' : 'FAIL'}  ${check.name.padEnd(11)}  ${check.detail}`)
      if (check.fix) io.out(`${' '.repeat(19)}fix: ${check.fix}`)
    }
    return checks.every((check) => check.ok) ? ExitCode.OK : ExitCode.CONFIG
  })
}
