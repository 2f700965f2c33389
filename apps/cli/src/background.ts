// `dsh run --bg`: the run goes on in a detached `dsh` process (its own session and process group, so
// neither a closed terminal nor a signal to the shell's group reaches it), which logs its output to
// $DSH_HOME/background and records itself there once its session exists; the launcher prints the
// session id and returns. `dsh agents` reads the records (done, failed, interrupted by a reboot).
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { dshHome } from '@dsh/composition'
import { HarnessError } from '@dsh/kernel/errors'
import { processStartTime } from '@dsh/session/store'
import { type BackgroundRecord, readBackgroundRecords, backgroundDir as recordsDir } from '@dsh/surfaces/host'
import type { Io } from './io.js'

/** Set in the detached process: the background run's id (its log's name). */
export const BACKGROUND_ENV = 'DSH_BACKGROUND'
/** The file descriptor the detached process announces its session on. */
const ANNOUNCE_FD = 3

function backgroundDir(env: NodeJS.ProcessEnv = process.env): string {
  return recordsDir(dshHome(env))
}

/**
 * The launcher side: starts the same command without `--bg` detached, waits until it names its
 * session (or fails, then shows why from its log), prints the id and returns.
 */
export async function startInBackground(argv: string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = argv.slice(2).filter((arg) => arg !== '--bg')
  if (args.includes('-')) {
    throw new HarnessError(
      'USAGE',
      'a background run cannot read its task from stdin: give it as words or with --task-file',
      {},
    )
  }
  const dir = backgroundDir(env)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const id = `bg-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`
  const log = join(dir, `${id}.log`)
  const out = openSync(log, 'a', 0o600)
  const child = spawn(process.execPath, [...process.execArgv, argv[1] as string, ...args], {
    cwd: process.cwd(),
    env: { ...env, [BACKGROUND_ENV]: id },
    detached: true,
    stdio: ['ignore', out, out, 'pipe'],
  })
  closeSync(out)
  const announced = await new Promise<string | { code: number | null }>((done) => {
    let text = ''
    const pipe = child.stdio[ANNOUNCE_FD] as NodeJS.ReadableStream | null
    pipe?.setEncoding('utf8')
    pipe?.on('data', (chunk: string) => {
      text += chunk
      const line = text.split('\n')[0]
      if (text.includes('\n') && line) done(line)
    })
    pipe?.on('error', () => {})
    child.once('exit', (code) => done({ code }))
    child.once('error', () => done({ code: null }))
  })
  if (typeof announced !== 'string') {
    const tail = readFileSync(log, 'utf8').trim().split('\n').slice(-10)
    for (const line of tail) io.err(line)
    io.err(`dsh: the background run ended before it started a session (log: ${log})`)
    return announced.code ?? 1
  }
  ;(child.stdio[ANNOUNCE_FD] as NodeJS.ReadableStream & { destroy(): void }).destroy()
  child.unref()
  io.out(announced)
  io.err(`dsh: running in the background as pid ${child.pid}, session ${announced}; log: ${log}`)
  io.err(`dsh: dsh agents shows it; dsh sessions show ${announced} prints its transcript`)
  return 0
}

/** In the detached process: records the run and tells the launcher its session id. */
export function announceBackground(env: NodeJS.ProcessEnv, sessionId: string, info: { cwd: string; task: string }) {
  const id = env[BACKGROUND_ENV]
  if (!id) return
  const dir = backgroundDir(env)
  const start = processStartTime(process.pid)
  const record: BackgroundRecord = {
    sessionId,
    pid: process.pid,
    ...(start === undefined ? {} : { startTime: start }),
    host: hostname(),
    cwd: info.cwd,
    task: info.task.length > 200 ? `${info.task.slice(0, 197)}...` : info.task,
    log: join(dir, `${id}.log`),
    startedAt: Date.now(),
  }
  writeRecord(dir, record)
  try {
    writeFileSync(ANNOUNCE_FD, `${sessionId}\n`)
    closeSync(ANNOUNCE_FD)
  } catch {
    // The launcher is gone already: nobody to tell.
  }
}

/** In the detached process, at the end: how the run ended. */
export function finishBackground(env: NodeJS.ProcessEnv, sessionId: string, reason: string, exitCode: number): void {
  if (!env[BACKGROUND_ENV]) return
  const dir = backgroundDir(env)
  const record = readBackgroundRecords(dir).find((item) => item.sessionId === sessionId && item.pid === process.pid)
  if (record) writeRecord(dir, { ...record, endedAt: Date.now(), reason, exitCode })
}

function writeRecord(dir: string, record: BackgroundRecord): void {
  const file = join(dir, `${record.sessionId}.json`)
  const temp = `${file}.${process.pid}.tmp`
  writeFileSync(temp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 })
  renameSync(temp, file)
}
