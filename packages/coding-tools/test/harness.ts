// The execution world of the base bundle under one Context (sandboxed fs and bash, observation policy,
// jobs, spill) plus helpers to call tools the way the agent loop does.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ApprovalService } from '@dsh/agent/approval'
import SystemPromptService from '@dsh/agent/system-prompt'
import { type ToolResult, ToolsService } from '@dsh/agent/tools'
import { Context } from '@dsh/kernel'
import type { ToolResultContent } from '@dsh/llm'
import SessionService from '@dsh/session'
import { apply as observation } from '@dsh/world/fs/observation'
import SandboxFs from '@dsh/world/fs/sandbox'
import JobsService from '@dsh/world/jobs'
import BwrapSandbox from '@dsh/world/sandbox/bwrap'
import LocalSandboxPolicy, { type SandboxPolicyConfig } from '@dsh/world/sandbox/policy'
import SandboxBash from '@dsh/world/shell/bash-sandbox'
import LocalSubprocess from '@dsh/world/subprocess/local'
import * as bashTool from '../src/bash-tool.js'
import * as fsTools from '../src/fs-tools.js'
import * as jobTools from '../src/job-tools.js'
import * as spill from '../src/spill.js'

export function hasBwrap(): boolean {
  try {
    execFileSync('bwrap', ['--ro-bind', '/', '/', '--unshare-pid', 'true'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

export interface WorldOptions {
  mode?: string
  maxInlineBytes?: number
  /** The bwrap executable (a missing one makes every confined command fail closed). */
  bwrap?: string
  /** More sandbox policy config (home, secretPaths, network). */
  policy?: Omit<SandboxPolicyConfig, 'mode' | 'workspaceRoot'>
}

/** Registers the world's plugins on `root` (everything but sessions/tools/approval). */
export async function mountWorld(root: Context, ws: string, options: WorldOptions = {}) {
  await root.plugin(LocalSubprocess)
  await root.plugin(LocalSandboxPolicy, {
    ...options.policy,
    mode: (options.mode ?? 'workspace-write') as never,
    workspaceRoot: ws,
  })
  await root.plugin(BwrapSandbox, options.bwrap ? { command: options.bwrap } : {})
  await root.plugin(SandboxBash, { cwd: ws, graceMs: 100 })
  await root.plugin(SandboxFs, { cwd: ws })
  await root.plugin({ name: 'fs-observation', apply: observation })
  await root.plugin(JobsService)
  await root.plugin(fsTools)
  const bash = root.plugin(bashTool)
  await bash
  await root.plugin(jobTools)
  await root.plugin(spill, { maxInlineBytes: options.maxInlineBytes ?? 40_000 })
  return { bash }
}

export async function createWorld(options: WorldOptions = {}) {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-ws-')))
  const root = new Context()
  await root.plugin(SessionService, { cwd: ws })
  await root.plugin(ApprovalService)
  await root.plugin(ToolsService)
  await root.plugin(SystemPromptService)
  const fibers = await mountWorld(root, ws, options)
  const session = root.sessions.create({ id: 's1', cwd: ws })
  let n = 0
  const call = (name: string, args: Record<string, unknown>, identity: { sessionId?: string; agentId?: string } = {}) =>
    root.tools.executeCall(
      { type: 'tool-call', id: `c${++n}`, name, arguments: args },
      { signal: new AbortController().signal, sessionId: 's1', agentId: 'a1', ...identity },
    )
  return {
    root,
    ws,
    session,
    call,
    fibers,
    async [Symbol.asyncDispose]() {
      await Promise.all(root.subprocess.live().map((handle) => handle.terminate()))
      rmSync(ws, { recursive: true, force: true })
    },
  }
}

export function textOf(result: ToolResult): string {
  return result.content
    .map((block: ToolResultContent) => (block.type === 'text' ? block.text : `[${block.type}]`))
    .join('\n')
}
