// `dsh` as a child process the way users start it: the built binary, DSH_HOME in a temp dir, the model
// behind DEEPSEEK_BASE_URL (the mock server), and the durable session log read back from disk. Every
// CLI test that starts `dsh` starts it here, so the environment a test runs it in is written once.
import {
  type ChildProcess,
  type ChildProcessWithoutNullStreams,
  type SpawnOptions,
  spawn,
  spawnSync,
} from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AnySessionEvent } from '@dsh/session'
import { type ChildExit, type WatchedChild, watchOutput } from '@dsh/test-support'

export const bin = fileURLToPath(new URL('../bin/dsh.js', import.meta.url))

export type { ChildExit as ChildRun } from '@dsh/test-support'

export interface DshOptions {
  /** DSH_HOME, and the working directory unless `cwd` says otherwise. */
  home: string
  cwd?: string
  /** The model's base URL: sets DEEPSEEK_BASE_URL and a test DEEPSEEK_API_KEY. Without it, neither is set. */
  modelUrl?: string
  /** Added to (or, `undefined`, removed from) the environment: PATH, DSH_HOME and the model variables. */
  env?: Record<string, string | undefined>
  /** Node options before the binary, e.g. `--import` of a module hook. */
  nodeArgs?: string[]
}

/** The environment `dsh` gets: PATH, DSH_HOME, the model when given, then `options.env`. */
function dshEnv(options: DshOptions): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    DSH_HOME: options.home,
    ...(options.modelUrl === undefined ? {} : { DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: options.modelUrl }),
    ...options.env,
  }
}

/**
 * The Node that runs `dsh`: this one, or `$DSH_TEST_NODE` (`.ci/run` points it at the newest Node line
 * to run the CLI tests there too, while vitest itself stays on this one).
 */
export const dshNode = process.env.DSH_TEST_NODE || process.execPath

function argv(args: string[], options: DshOptions): string[] {
  return [...(options.nodeArgs ?? []), bin, ...args]
}

/** Spawns `dsh ...args` and returns the child, for a test that talks to it or signals it. */
export function spawnDsh(args: string[], options: DshOptions & { stdio: 'ignore' }): ChildProcess
export function spawnDsh(args: string[], options: DshOptions): ChildProcessWithoutNullStreams
export function spawnDsh(args: string[], options: DshOptions & { stdio?: 'ignore' }): ChildProcess {
  const spawnOptions: SpawnOptions = { cwd: options.cwd ?? options.home, env: dshEnv(options) }
  if (options.stdio) spawnOptions.stdio = options.stdio
  return spawn(dshNode, argv(args, options), spawnOptions)
}

/** A running `dsh`: the child, its output so far, and its exit with all of its output. */
export interface DshChild extends WatchedChild {
  proc: ChildProcessWithoutNullStreams
}

/** Spawns `dsh ...args` and collects its output while it runs. */
export function startDsh(args: string[], options: DshOptions): DshChild {
  const proc = spawnDsh(args, options)
  return { proc, ...watchOutput(proc) }
}

/** Runs `dsh ...args` to its exit. */
export function runDsh(args: string[], options: DshOptions): Promise<ChildExit> {
  return startDsh(args, options).exited
}

/**
 * Runs `dsh ...args` to its exit, blocking this process: only for a run that needs nothing from it
 * meanwhile (no mock server in this process). Killed after `timeout` ms (default 15 s).
 */
export function runDshSync(args: string[], options: DshOptions & { timeout?: number }): ChildExit {
  const result = spawnSync(dshNode, argv(args, options), {
    cwd: options.cwd ?? options.home,
    env: dshEnv(options),
    encoding: 'utf8',
    timeout: options.timeout ?? 15_000,
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/** The events of the only session under `home`, read from its JSONL file (the per-line seal dropped). */
export function durableEvents(home: string): AnySessionEvent[] {
  const files = readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))
  if (files.length !== 1) throw new Error(`expected one session in ${home}, found ${files.length}`)
  const lines = readFileSync(join(home, 'sessions', files[0] as string), 'utf8')
    .trim()
    .split('\n')
  return lines.slice(1).map((line) => {
    const { crc: _crc, hash: _hash, ...event } = JSON.parse(line)
    return event as AnySessionEvent
  })
}
