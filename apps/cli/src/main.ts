// The `dsh` command line: global composition options, dumps, and the subcommands.
// Each command's implementation is imported inside its action, so `dsh --help` loads no runtime.
import { readFileSync, statSync } from 'node:fs'
import { basename, resolve } from 'node:path'
import { didYouMean, HarnessError } from '@dsh/kernel/errors'
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import type { ChatOptions } from './commands/chat.js'
import type { ConfigOptions } from './commands/config.js'
import type { ModelsOptions } from './commands/models.js'
import type { RunOptions } from './commands/run.js'
import type { WebOptions } from './commands/web.js'
import type { ComposeRequest, GlobalOptions } from './config.js'
import { ExitCode, exitCodeFor, exitCodeHelp } from './exit-codes.js'
import { type Io, processIo } from './io.js'

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value]
}

/**
 * A group's default subcommand (`dsh sessions` is `dsh sessions ls`) takes an optional hidden word, so
 * that a mistyped subcommand (`dsh sessions shw`) is named as one, with the closest, rather than
 * reported as too many arguments for the default.
 */
function refuseUnknownSub(group: Command, words: string[]): void {
  const [word] = words
  if (word === undefined) return
  const names = group.commands.map((c) => c.name())
  throw new HarnessError(
    'USAGE',
    `unknown command '${group.name()} ${word}'${didYouMean(word, names, "'")}; the commands are: ${names.join(', ')}`,
    { command: word },
  )
}

/** The optional word a default subcommand takes only to name a mistyped subcommand (see refuseUnknownSub). */
function hiddenWord(): Argument {
  return new Argument('[command...]', 'a subcommand (see the list above)')
}

function buildProgram(io: Io, env: NodeJS.ProcessEnv, argv: string[], setCode: (code: number) => void): Command {
  const program = new Command('dsh')
  program
    .description('dsh: a plugin-microkernel agent harness. Products are composed from bundles, profiles and patches.')
    .version(version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .option(
      '--profile <name>',
      'profile under $DSH_HOME/profiles (default: $DSH_PROFILE, else headless; web for `dsh web`)',
    )
    .addOption(
      new Option('--patch <file>', 'apply a patch file after the profile and home patches (repeatable)').argParser(
        collect,
      ),
    )
    .option('--dump-config', 'print the effective plugin tree with the layer each row came from, then exit')
    .option('--dump-default-config', 'print the tree from the profile bundles only (no user patches), then exit')
    .option('--watch-config', 'watch the user patch files and reconfigure the running tree on edits')
    .option(
      '--trust',
      "load this folder's .mcp.json, hooks, presets with rows and project settings for this run, without trusting it for later (dsh trust does)",
    )
    .addOption(
      new Option(
        '--set <key=value>',
        'set a setting for this run only, above files and environment (repeatable)',
      ).argParser(collect),
    )
    .addHelpText(
      'after',
      `
Environment:
  DSH_HOME      where profiles, patches and sessions live (default ~/.dsh)
  DSH_PROFILE   the default profile
  DSH_DEBUG=1   print stack traces and kernel debug logs

${exitCodeHelp()}`,
    )
    .exitOverride()
    .hook('preAction', (_program, action) => {
      // A missing --cwd would run and fail only at the first tool call (as "spawn bwrap ENOENT").
      const cwd = action.opts<{ cwd?: unknown }>().cwd
      if (typeof cwd !== 'string') return
      const path = resolve(cwd)
      let directory = false
      try {
        directory = statSync(path).isDirectory()
      } catch {}
      if (!directory)
        throw new HarnessError('USAGE', `--cwd ${cwd}: ${path} is not an existing directory`, { cwd, path })
    })
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })

  const request = (command: string, args: string[] = []): ComposeRequest => ({
    options: program.opts<GlobalOptions>(),
    command,
    args,
    env,
  })

  const dump = async (): Promise<void> => {
    const options = program.opts<GlobalOptions>()
    const [{ compose }, { dumpTree }] = await Promise.all([import('./config.js'), import('@dsh/composition')])
    const composition = compose({ ...request('dump'), defaultsOnly: Boolean(options.dumpDefaultConfig) })
    for (const warning of composition.tree.warnings) io.err(`dsh: warning: ${warning}`)
    const kind = options.dumpDefaultConfig ? 'default config (bundles only)' : 'effective config'
    io.out(dumpTree(composition.tree, { title: `dsh ${kind} of profile ${composition.profile}` }).trimEnd())
  }

  program
    .command('chat', { isDefault: true })
    .description('the interactive terminal chat (the default: plain `dsh`); a first prompt may follow')
    .argument('[prompt...]', 'sent as the first message')
    .option('--model <model>', 'model name, or provider:model (default: $DSH_MODEL, else the provider default)')
    .option('--provider <name>', 'model provider (default: deepseek)')
    .option('--cwd <dir>', 'working directory of the session (default: the current directory)')
    .option('--preset <name>', 'agent preset of a new session: code (default), plan, ask, minimal, or your own')
    .addOption(
      new Option(
        '--permission-mode <mode>',
        "what tools may do without asking (default: the preset's, else the profile's: workspace-write)",
      ).choices(['read-only', 'workspace-write', 'danger-full-access', 'offline']),
    )
    .option('--resume [id]', 'continue the durable session with this id; without an id, pick one of this directory')
    .option('--continue', 'continue the latest session of this directory')
    .option(
      '--worktree [name]',
      'work in a new git worktree on branch dsh/<name>; at the end you merge, keep or discard its changes',
    )
    .option('--carry-changes', "with --worktree: bring the repository's uncommitted changes to tracked files along")
    .action(async (args: string[], options: ChatOptions) => {
      const global = program.opts<GlobalOptions>()
      if (global.dumpConfig || global.dumpDefaultConfig) return dump()
      const [word] = args
      if (args.length === 1 && word && /^[a-z][a-z0-9-]*$/.test(word) && !argv.includes('--')) {
        // A lone bare word is far more often a mistyped subcommand than a whole first prompt.
        throw new HarnessError(
          'USAGE',
          `unknown command '${word}'${didYouMean(
            word,
            program.commands.map((c) => c.name()),
            "'",
          )} (dsh --help lists them); to open the chat with it as the first prompt: dsh -- ${word}`,
          { command: word },
        )
      }
      setCode(await (await import('./commands/chat.js')).chat(request('chat', args), options, io))
    })

  program
    .command('check')
    .description('boot the profile, print the active rows; exit 4 naming rows that did not activate')
    .action(async () => setCode(await (await import('./commands/check.js')).check(request('check'), io)))

  const positiveInt = (value: string): number => {
    const number = Number(value)
    if (!Number.isInteger(number) || number < 1) throw new InvalidArgumentError('must be a positive integer')
    return number
  }
  const dollars = (value: string): number => {
    const number = Number(value.replace(/^\$/, ''))
    if (value.trim() === '' || !Number.isFinite(number) || number <= 0)
      throw new InvalidArgumentError('must be a positive amount of US dollars, e.g. 0.50')
    return number
  }
  program
    .command('run')
    .description('run one task headless: the final answer on stdout, progress on stderr, exit 0 only if completed')
    .argument('[task...]', 'the task; `-` reads it from stdin')
    .addOption(
      new Option('--output <format>', 'text, json, or stream-json (one event per line)')
        .choices(['text', 'json', 'stream-json'])
        .default('text'),
    )
    .option('--model <model>', 'provider:model, or a model name (default: the model setting, see dsh config)')
    .option('--provider <name>', 'model provider (default: deepseek)')
    .option('--cwd <dir>', 'working directory of the session (default: the current directory)')
    .option('--preset <name>', 'agent preset of a new session: code (default), plan, ask, minimal, or your own')
    .addOption(
      new Option(
        '--permission-mode <mode>',
        "what tools may do without asking (default: the preset's, else the profile's: workspace-write)",
      ).choices(['read-only', 'workspace-write', 'danger-full-access', 'offline']),
    )
    .addOption(
      new Option('--network <policy>', 'network of sandboxed commands (default: the profile, normally on)').choices([
        'on',
        'off',
      ]),
    )
    .option('-y, --yes', 'allow actions that need approval, once each (headless cannot ask a person)')
    .addOption(new Option('--max-turns <n>', 'stop after this many turns').argParser(positiveInt))
    .addOption(new Option('--max-steps <n>', 'steps per turn before it ends blocked').argParser(positiveInt))
    .addOption(
      new Option(
        '--max-cost <usd>',
        'cost budget in US dollars: the turn stops before the request past it (exit 8)',
      ).argParser(dollars),
    )
    .option('--resume <id>', 'continue the durable session with this id')
    .option('--continue', 'continue the latest session of this directory')
    .option(
      '--remote <target>',
      'run every tool on another machine over SSH: user@host:/path, an ~/.ssh/config alias as alias:/path, or ssh://user@host:port/path (default: the remote setting)',
    )
    .addOption(
      new Option(
        '--attach <file>',
        'attach a file to the task: an image (png, jpeg, gif, webp) or text (repeatable)',
      ).argParser(collect),
    )
    .option('--task-file <file>', 'read the task from a file (e.g. an issue body in CI), after the words given')
    .option('--summary <file>', 'append a Markdown summary of the run to this file (e.g. $GITHUB_STEP_SUMMARY)')
    .option(
      '--worktree [name]',
      'work in a new git worktree on branch dsh/<name> (default name generated), beside the repository or in the worktrees.dir setting; write --worktree=NAME before the task',
    )
    .option('--carry-changes', "with --worktree: bring the repository's uncommitted changes to tracked files along")
    .addOption(
      new Option(
        '--worktree-end <choice>',
        "with --worktree: the branch's fate at the end: merge (into the repository's current branch), keep (default), discard",
      ).choices(['merge', 'keep', 'discard']),
    )
    .option(
      '--bg',
      'run in the background: print the session id and return; the run goes on in a detached dsh (dsh agents lists it)',
    )
    .action(async (args: string[], options: RunOptions) => {
      if (options.bg) {
        setCode(await (await import('./background.js')).startInBackground(argv, io, env))
        return
      }
      setCode(await (await import('./commands/run.js')).run(request('run', args), options, io))
    })

  program
    .command('review')
    .description(
      'review a change headless with the review preset: findings (file, line, severity, message) as Markdown, JSON or GitHub annotations',
    )
    .argument('[range]', 'a git diff range, e.g. origin/main...HEAD (default: HEAD, the uncommitted changes)')
    .option('--diff <file>', "review this diff or patch file (a pull request's .diff or .patch) instead; - reads stdin")
    .addOption(
      new Option('--output <format>', 'text (Markdown), json, or github (workflow annotations)')
        .choices(['text', 'json', 'github'])
        .default('text'),
    )
    .addOption(
      new Option('--fail-on <severity>', 'exit 15 when a finding is this severe or worse').choices([
        'error',
        'warning',
        'note',
      ]),
    )
    .option('--summary <file>', 'append the Markdown review to this file (e.g. $GITHUB_STEP_SUMMARY)')
    .option('--model <model>', 'provider:model, or a model name (default: the model setting)')
    .option('--provider <name>', 'model provider (default: deepseek)')
    .option('--cwd <dir>', 'the repository (default: the current directory)')
    .option('--preset <name>', 'a preset of your own that allows report_finding (default: review)')
    .addOption(new Option('--max-cost <usd>', 'cost budget in US dollars (exit 8 when reached)').argParser(dollars))
    .action(async (range: string | undefined, options: import('./commands/review.js').ReviewOptions) =>
      setCode(await (await import('./commands/review.js')).review(request('run'), range, options, io)),
    )

  program
    .command('attach')
    .description(
      'a terminal on a running session: its conversation, the live stream, its approvals asked here; a background run also takes messages (Ctrl-D detaches)',
    )
    .argument('<id>', 'session id, or a unique prefix of one (dsh agents lists them)')
    .action(async (id: string) =>
      setCode(await (await import('./commands/attach.js')).attach(request('attach'), id, io)),
    )

  const agents = program
    .command('agents')
    .description(
      'every agent running on this machine or the shared store (chat, runs, background runs, subagents) with its state, model, cost and last activity',
    )
  agents
    .command('ls', { isDefault: true })
    .description(
      'list them: running, waiting for approval, waiting for input; background runs also done, failed, interrupted',
    )
    .addArgument(hiddenWord())
    .option('--json', 'print JSON instead of a table')
    .action(async (words: string[], options: { json?: boolean }) => {
      refuseUnknownSub(agents, words)
      setCode(await (await import('./commands/agents.js')).agentsList(request('agents'), options, io))
    })
  agents
    .command('stop')
    .description('stop a running agent of this machine: its turn is cancelled and its session saved')
    .argument('<id>', 'session id, or a unique prefix of one')
    .action(async (id: string) =>
      setCode(await (await import('./commands/agents.js')).agentsStop(request('agents'), id, io)),
    )

  const worktrees = program
    .command('worktrees')
    .description('the git worktrees dsh made for sessions and subagents: list, diff, merge, keep, discard, prune')
  const worktreeCommand = async <T>(load: (module: typeof import('./commands/worktrees.js')) => Promise<T>) =>
    load(await import('./commands/worktrees.js'))
  worktrees
    .command('ls', { isDefault: true })
    .description('list them with their state (active, kept, orphaned, missing) and work')
    .addArgument(hiddenWord())
    .option('--json', 'print JSON instead of a table')
    .action(async (words: string[], options: { json?: boolean }) => {
      refuseUnknownSub(worktrees, words)
      setCode(await worktreeCommand((m) => m.worktreesList(request('worktrees'), options, io)))
    })
  worktrees
    .command('diff')
    .description("print a worktree branch's changes since it started (uncommitted work is committed first)")
    .argument('<name>', 'worktree name (or its branch)')
    .action(async (name: string) =>
      setCode(await worktreeCommand((m) => m.worktreesDiff(request('worktrees'), name, io))),
    )
  worktrees
    .command('merge')
    .description(
      "merge a worktree's branch into the repository's current branch (fast-forward when it can, else a merge commit); a conflict is undone and named",
    )
    .argument('<name>', 'worktree name (or its branch)')
    .option('--ff-only', 'only a fast-forward')
    .option('--no-ff', 'always a merge commit')
    .action(async (name: string, options: { ffOnly?: boolean; ff?: boolean }) =>
      setCode(
        await worktreeCommand((m) =>
          m.worktreesMerge(request('worktrees'), name, { ffOnly: options.ffOnly, noFf: options.ff === false }, io),
        ),
      ),
    )
  worktrees
    .command('keep')
    .description('keep a worktree and its branch for later (its work is committed; prune leaves it alone)')
    .argument('<name>', 'worktree name (or its branch)')
    .action(async (name: string) =>
      setCode(await worktreeCommand((m) => m.worktreesKeep(request('worktrees'), name, io))),
    )
  worktrees
    .command('discard')
    .description('remove a worktree and delete its branch: its work is lost')
    .argument('<name>', 'worktree name (or its branch)')
    .action(async (name: string) =>
      setCode(await worktreeCommand((m) => m.worktreesDiscard(request('worktrees'), name, io))),
    )
  worktrees
    .command('prune')
    .description(
      'clear what crashes left: records without a folder, and worktrees whose session died (their work is committed and the branch kept)',
    )
    .action(async () => setCode(await worktreeCommand((m) => m.worktreesPrune(request('worktrees'), io))))

  const sessions = program
    .command('sessions')
    .description('list, show, export, import, fork, rewind and remove the durable sessions in $DSH_HOME')
  sessions
    .command('ls', { isDefault: true })
    .description('list sessions, most recently updated first')
    .addArgument(hiddenWord())
    .option('--json', 'print JSON instead of a table')
    .action(async (words: string[], options: { json?: boolean }) => {
      refuseUnknownSub(sessions, words)
      setCode(await (await import('./commands/sessions.js')).sessionsList(request('sessions'), options, io))
    })
  sessions
    .command('show')
    .description('print a readable transcript (tool calls and results abbreviated)')
    .argument('<id>', 'session id')
    .action(async (id: string) =>
      setCode(await (await import('./commands/sessions.js')).sessionsShow(request('sessions'), id, io)),
    )
  sessions
    .command('export')
    .description('print a session as markdown, as its JSONL log, or as one self-contained HTML page')
    .argument('<id>', 'session id')
    .addOption(
      new Option(
        '--format <format>',
        'md, jsonl (the stored lines, hash chain included), html (a page that renders the transcript as dsh web does, no network needed), or bundle (the log with its hash chain, attachment blobs and workspace checkpoints, for dsh sessions import on another machine)',
      )
        .choices(['md', 'jsonl', 'html', 'bundle'])
        .default('md'),
    )
    .option('--no-tool-output', 'html: leave the tool outputs out (the calls stay)')
    .action(async (id: string, options: { format: 'md' | 'jsonl' | 'html' | 'bundle'; toolOutput: boolean }) =>
      setCode(await (await import('./commands/sessions.js')).sessionsExport(request('sessions'), id, options, io)),
    )
  sessions
    .command('fork')
    .description('copy a closed prefix of a session into a new session and print its id')
    .argument('<id>', 'session id')
    .addOption(
      new Option('--at <seq>', 'last event to keep (default: the whole session)').argParser((value) => {
        const seq = Number(value)
        if (!Number.isInteger(seq) || seq < 0) throw new InvalidArgumentError('must be an event seq (0 or more)')
        return seq
      }),
    )
    .action(async (id: string, options: { at?: number }) =>
      setCode(await (await import('./commands/sessions.js')).sessionsFork(request('sessions'), id, options, io)),
    )

  sessions
    .command('rewind')
    .description(
      'list the messages of a session with what each turn changed, or go back to one (--to N): the files, the conversation (a new session before it) or both',
    )
    .argument('<id>', 'session id (or a unique prefix)')
    .addOption(
      new Option('--to <n>', 'the message number to go back to (as listed)').argParser((value) => {
        const n = Number(value)
        if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a message number (1 or more)')
        return n
      }),
    )
    .addOption(new Option('--files', 'write the workspace back only').conflicts(['conversation', 'both']))
    .addOption(new Option('--conversation', 'fork the conversation before the message only').conflicts(['both']))
    .addOption(new Option('--both', 'the files and the conversation (the default)'))
    .addOption(new Option('--undo', "take back the newest turn's file changes (as /undo)").conflicts(['to', 'redo']))
    .addOption(new Option('--redo', 'give back what the last rewind or --undo took back (as /redo)').conflicts(['to']))
    .option('--overwrite', 'also write back files someone else changed since the session last saw them')
    .option('--json', 'print JSON')
    .action(
      async (
        id: string,
        options: {
          to?: number
          files?: boolean
          conversation?: boolean
          both?: boolean
          undo?: boolean
          redo?: boolean
          overwrite?: boolean
          json?: boolean
        },
      ) => {
        const mode = options.files ? 'files' : options.conversation ? 'conversation' : 'both'
        setCode(
          await (await import('./commands/sessions.js')).sessionsRewind(
            request('sessions'),
            id,
            {
              mode,
              ...(options.to !== undefined ? { to: options.to } : {}),
              ...(options.overwrite ? { overwrite: true } : {}),
              ...(options.json ? { json: true } : {}),
              ...(options.undo ? { step: 'undo' as const } : options.redo ? { step: 'redo' as const } : {}),
            },
            io,
          ),
        )
      },
    )

  sessions
    .command('rm')
    .description('delete sessions, and the attachment blobs no other session uses')
    .argument('<id...>', 'session ids')
    .action(async (ids: string[]) =>
      setCode(await (await import('./commands/sessions.js')).sessionsRemove(request('sessions'), ids, io)),
    )
  sessions
    .command('import')
    .description(
      'import a session bundle (dsh sessions export ID --format bundle) with its attachments and workspace checkpoints; every event is checked against the hash chain first, and a damaged bundle is refused naming the event',
    )
    .argument('<file>', 'the bundle, or - for stdin')
    .option('--as <id>', "import under this id (the bundle's is taken, or a second copy is wanted)")
    .option(
      '--cwd <dir>',
      'the workspace the session continues in here (when its recorded one does not exist on this machine)',
    )
    .action(async (file: string, options: { as?: string; cwd?: string }) =>
      setCode(
        await (await import('./commands/session-bundle.js')).sessionsImport(request('sessions'), file, options, io),
      ),
    )
  sessions
    .command('repair')
    .description('keep the readable prefix of a damaged session; move the rest to a side file next to it')
    .argument('<id>', 'session id')
    .action(async (id: string) =>
      setCode(await (await import('./commands/sessions.js')).sessionsRepair(request('sessions'), id, io)),
    )
  sessions
    .command('verify')
    .description(
      "check a session's hash chain (every event against its content and the one before it); with --signature and --key, also that the signature covers it",
    )
    .argument('<id|file>', 'session id (or a unique prefix), or a file from `dsh sessions export ID --format jsonl`')
    .option('--signature <file>', 'a signature file from `dsh sessions sign`')
    .option('--key <file>', 'the public key to check the signature with (PEM, or an OpenSSH .pub line)')
    .option('--json', 'print the verdict as JSON')
    .action(async (id: string, options: { signature?: string; key?: string; json?: boolean }) =>
      setCode(
        await (await import('./commands/sessions-verify.js')).sessionsVerify(request('sessions'), id, options, io),
      ),
    )
  sessions
    .command('sign')
    .description(
      "sign a session's verified hash chain with your key (Ed25519 PEM, or an OpenSSH key through ssh-keygen)",
    )
    .argument('<id>', 'session id (or a unique prefix)')
    .requiredOption('--key <file>', 'the private key')
    .option('--out <file>', 'where the signature goes (default ID.dsh-sig in the current directory)')
    .action(async (id: string, options: { key: string; out?: string }) =>
      setCode(await (await import('./commands/sessions-verify.js')).sessionsSign(request('sessions'), id, options, io)),
    )
  sessions
    .command('migrate')
    .description('copy the sessions of this store into PostgreSQL (idempotent; every copy is read back and compared)')
    .requiredOption('--to <url>', 'postgres://user@host:port/database (the password in PGPASSWORD or ~/.pgpass)')
    .option('--schema <name>', 'the PostgreSQL schema holding the tables', 'public')
    .action(async (options: { to: string; schema: string }) =>
      setCode(await (await import('./commands/sessions-migrate.js')).sessionsMigrate(request('sessions'), options, io)),
    )

  const config = program
    .command('config')
    .description('read and write settings ($DSH_HOME/settings.yaml, .dsh/settings.yaml) and credentials')
  config
    .command('list', { isDefault: true })
    .description('every setting with its value and where it came from')
    .addArgument(hiddenWord())
    .option('--json', 'print JSON')
    .action(async (words: string[], options: ConfigOptions) => {
      refuseUnknownSub(config, words)
      setCode(await (await import('./commands/config.js')).configList(request('config'), options, io))
    })
  config
    .command('get')
    .description('print one setting (its source on stderr); for a credential name, only where it is set')
    .argument('<key>', 'a setting key (dsh config list), or a credential name such as ANTHROPIC_API_KEY')
    .option('--json', 'print JSON with the source')
    .action(async (key: string, options: ConfigOptions) =>
      setCode(await (await import('./commands/config.js')).configGet(request('config'), key, options, io)),
    )
  config
    .command('set')
    .description('write a setting to the user file (or --project), keeping its comments; capitals store a credential')
    .argument('<key>', 'a key, or a path into one (endpoints.local.baseUrl)')
    .argument('<value>', 'the value (read as the key expects: text, number, true/false, [a, b])')
    .option('--project', 'write .dsh/settings.yaml of the current directory')
    .action(async (key: string, value: string, options: ConfigOptions) =>
      setCode(await (await import('./commands/config.js')).configSet(request('config'), key, value, options, io)),
    )
  config
    .command('unset')
    .description('remove a setting from the user file (or --project), or a stored credential')
    .argument('<key>', 'a key or a path into one')
    .option('--project', 'edit .dsh/settings.yaml of the current directory')
    .action(async (key: string, options: ConfigOptions) =>
      setCode(await (await import('./commands/config.js')).configUnset(request('config'), key, options, io)),
    )

  const presets = program.command('presets').description('list the agent presets and show what one composes')
  presets
    .command('ls', { isDefault: true })
    .description('list the presets this directory sees (project, user, shipped), the default marked *')
    .option('--json', 'print JSON')
    .option('--cwd <dir>', 'the project directory (default: the current directory)')
    .addArgument(hiddenWord())
    .action(async (words: string[], options: { json?: boolean; cwd?: string }) => {
      refuseUnknownSub(presets, words)
      setCode(await (await import('./commands/presets.js')).presetsList(request('presets'), options, io))
    })
  presets
    .command('show')
    .description("print a preset's effective agent configuration, each part with where it came from")
    .argument('<name>', 'preset name')
    .option('--json', 'print JSON')
    .option('--cwd <dir>', 'the project directory (default: the current directory)')
    .option('--model <model>', 'an agent-level model (provider:model) to show it overriding the preset')
    .action(async (name: string, options: { json?: boolean; cwd?: string; model?: string }) =>
      setCode(await (await import('./commands/presets.js')).presetsShow(request('presets'), name, options, io)),
    )

  program
    .command('trust')
    .description(
      "trust a folder's configuration that can run code or reach the network (.mcp.json, hooks, presets with rows)",
    )
    .argument('[path]', 'the folder (default: the current directory)')
    .option('--revoke', 'forget the folder: its configuration is inert again')
    .option('--list', 'list the trusted folders')
    .option('--json', 'print JSON')
    .action(async (path: string | undefined, options: { revoke?: boolean; list?: boolean; json?: boolean }) =>
      setCode(await (await import('./commands/trust.js')).trust(request('trust'), path, options, io)),
    )

  const plugin = program
    .command('plugin')
    .description('install, list and remove out-of-tree plugins (bundle packages) in $DSH_HOME')
  plugin
    .command('add')
    .description('npm-install a bundle package into $DSH_HOME and name it in $DSH_HOME/patch.yml')
    .argument('<spec>', 'a package name (name@version), a tarball (.tgz) or a package directory')
    .option('--allow-scripts', "run the package's install scripts (off by default: they are its author's code)")
    .option('--allow-replace', 'let its rows replace shipped rows of the same id (listed; refused without this)')
    .action(async (spec: string, options: { allowScripts?: boolean; allowReplace?: boolean }) =>
      setCode(await (await import('./commands/plugin.js')).pluginAdd(request('plugin'), spec, io, options)),
    )
  plugin
    .command('ls', { isDefault: true })
    .description('list the installed plugins, whether the home patch enables them, and their rows')
    .option('--json', 'print JSON')
    .addArgument(hiddenWord())
    .action(async (words: string[], options: { json?: boolean }) => {
      refuseUnknownSub(plugin, words)
      setCode(await (await import('./commands/plugin.js')).pluginList(request('plugin'), options, io))
    })
  plugin
    .command('rm')
    .description('remove a plugin from $DSH_HOME/patch.yml and uninstall it')
    .argument('<name>', 'the package name')
    .action(async (name: string) =>
      setCode(await (await import('./commands/plugin.js')).pluginRemove(request('plugin'), name, io)),
    )

  program
    .command('models')
    .description('the models of the providers with a key or endpoint: context window, reasoning, prices')
    .option('--json', 'print JSON')
    .option('--all', 'also list providers that have no key yet')
    .option('--provider <name>', 'only this provider')
    .action(async (options: ModelsOptions) =>
      setCode(await (await import('./commands/models.js')).models(request('models'), options, io)),
    )

  program
    .command('doctor')
    .description('check Node, the sandbox (why not, and the fix), process containment, the model key and endpoint')
    .action(async () => setCode(await (await import('./commands/doctor.js')).doctor(request('doctor'), io)))

  program
    .command('rpc')
    .description('serve newline-delimited JSON-RPC 2.0 over stdio (for SDK clients); logs go to stderr')
    .action(async () => setCode(await (await import('./commands/serve.js')).serve('rpc', request('rpc'), io)))
  program
    .command('acp')
    .description('serve the Agent Client Protocol over stdio (for editors); logs go to stderr')
    .action(async () => setCode(await (await import('./commands/serve.js')).serve('acp', request('acp'), io)))

  const port = (value: string): number => {
    const number = Number(value)
    if (!Number.isInteger(number) || number < 0 || number > 65535)
      throw new InvalidArgumentError('must be a port (0-65535)')
    return number
  }
  program
    .command('web')
    .description('serve the browser UI and its API on http://127.0.0.1:3080 (loopback unless --host)')
    .option('--host <address>', 'address to bind; beyond loopback an access token is required', '127.0.0.1')
    .addOption(new Option('--port <port>', 'port (0 picks a free one)').argParser(port).default(3080))
    .addOption(
      new Option('--trusted-host <name>', 'accept this Host header besides loopback (repeatable)').argParser(collect),
    )
    .option('--open', 'open the UI in the default browser')
    .action(async (options: WebOptions) =>
      setCode(await (await import('./commands/web.js')).web(request('web'), options, io)),
    )

  program
    .command('demo')
    .description('replay a recorded session through the real pipeline on a copy of a sample project (no API key)')
    .action(async () => setCode(await (await import('./commands/demo.js')).demo(request('demo'), io)))

  const toolsOption = () =>
    new Option(
      '--tools <source>',
      'run: run the tools again on a scratch copy of the workspace; log: serve their logged results',
    )
      .choices(['run', 'log'])
      .default('run')
  program
    .command('replay')
    .description(
      "re-run a stored session with the model's answers from its log (no key, no network) and report where it diverges (exit 13); nothing is written to the session or the workspace",
    )
    .argument('<session>', 'a session id (or unique prefix), or a session JSONL file')
    .addOption(toolsOption())
    .addOption(
      new Option(
        '--from <n>',
        'what-if: the conversation before message N, then message N again live (with --model, --preset or --message) in a new session on a scratch copy of the files as they were',
      ).argParser((value) => {
        const n = Number(value)
        if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a message number (1 or more)')
        return n
      }),
    )
    .option('--model <model>', 'what-if: the model of the new branch (provider:model or a model name)')
    .option('--preset <name>', 'what-if: the preset of the new branch')
    .option('--message <text>', 'what-if: send this instead of message N')
    .option('--json', 'print the report as JSON')
    .option('--keep', "keep the replay's scratch workspace (its path is printed)")
    .option(
      '--step',
      'step through the recorded requests instead (nothing runs): each request as the model saw it, its answer, tool calls and results; keys on stdin',
    )
    .action(
      async (
        target: string,
        options: {
          tools: 'run' | 'log'
          json?: boolean
          keep?: boolean
          from?: number
          model?: string
          preset?: string
          message?: string
          step?: boolean
        },
      ) => {
        if (options.step) {
          if (options.from !== undefined || options.json)
            throw new InvalidArgumentError('--step reads the log only: it does not go with --from or --json')
          return setCode(await (await import('./commands/replay-step.js')).replayStep(request('replay'), target, io))
        }
        if (options.from === undefined) {
          if (options.model || options.preset || options.message)
            throw new InvalidArgumentError('--model, --preset and --message go with --from N (a what-if)')
          return setCode(await (await import('./commands/replay.js')).replay(request('replay'), target, options, io))
        }
        const { from, model, preset, message, json, keep } = options
        setCode(
          await (await import('./commands/whatif.js')).whatIf(
            request('replay'),
            target,
            {
              from,
              ...(model ? { model } : {}),
              ...(preset ? { preset } : {}),
              ...(message ? { message } : {}),
              ...(json ? { json } : {}),
              ...(keep ? { keep } : {}),
            },
            io,
          ),
        )
      },
    )
  program
    .command('test')
    .description('replay every session file (*.jsonl) in a folder; fails (exit 13) when any diverges')
    .argument('<dir>', 'a folder of recorded sessions (dsh sessions export ID --format jsonl > dir/name.jsonl)')
    .addOption(toolsOption())
    .option('--json', 'print the reports as JSON')
    .action(async (dir: string, options: { tools: 'run' | 'log'; json?: boolean }) =>
      setCode(await (await import('./commands/replay.js')).replayFolder(request('test'), dir, options, io)),
    )

  return program
}

function restoreTerminal(): void {
  if (process.stdin.isTTY && process.stdin.isRaw) process.stdin.setRawMode(false)
}

/** What the user can do about a session that cannot be opened (the lease message names its own way out). */
function nextStep(error: HarnessError): string | undefined {
  if (error.code === 'SESSION_NOT_FOUND')
    return '`dsh sessions ls` lists the sessions; `--continue` takes the latest here'
  if (error.code !== 'SESSION_CORRUPT') return undefined
  const file = typeof error.facts.file === 'string' ? error.facts.file : undefined
  const id = typeof error.facts.id === 'string' ? error.facts.id : file ? basename(file, '.jsonl') : 'ID'
  return `to keep the readable part and move the damaged rest to a side file: dsh sessions repair ${id}`
}

/** Runs the CLI and resolves with the exit code; never throws. */
export async function main(
  argv: string[],
  io: Io = processIo(),
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  let code: number = ExitCode.OK
  const program = buildProgram(io, env, argv, (value) => {
    code = value
  })
  try {
    await program.parseAsync(argv)
    return code
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return error.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE
    }
    const harness = HarnessError.is(error) ? error : undefined
    io.err(`dsh: ${harness ? harness.message : error instanceof Error ? error.message : String(error)}`)
    const next = harness && nextStep(harness)
    if (next) io.err(`dsh: ${next}`)
    if (env.DSH_DEBUG === '1' && error instanceof Error) io.err(error.stack ?? '')
    else if (!harness) io.err('dsh: (set DSH_DEBUG=1 for the stack trace)')
    return exitCodeFor(harness?.code)
  } finally {
    restoreTerminal()
  }
}
