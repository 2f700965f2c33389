// An MCP server runs outside dsh's sandbox (issue 34): in a read-only session an MCP tool call asks for
// approval unless the tool is declared read-only (annotations.readOnlyHint) by a server the user
// configured (a row, not the project's .mcp.json). Headless with nobody to ask, the write never happens.
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ApprovalQuestion } from '@dsh/agent/approval'
import type { ToolCallBlock } from '@dsh/llm'
import LocalSandboxPolicy from '@dsh/world/sandbox/policy'
import { expect, it } from 'vitest'
import { createDsh, filesystem, signal, tempDir } from './harness.js'

const call = (id: string, name: string, args: Record<string, unknown>): ToolCallBlock => ({
  type: 'tool-call',
  id,
  name,
  arguments: args,
})

it('asks before an MCP tool writes in a read-only session; trusted read-only tools run; untrusted ones ask', async () => {
  using trusted = tempDir()
  using project = tempDir()
  using outside = tempDir()
  writeFileSync(join(trusted.path, 'a.txt'), 'alpha\n')
  writeFileSync(join(project.path, '.mcp.json'), JSON.stringify({ mcpServers: { proj: filesystem(outside.path) } }))
  await using dsh = await createDsh({
    servers: { fs: filesystem(trusted.path, outside.path) },
    mcpJson: join(project.path, '.mcp.json'),
  })
  const { root } = dsh
  await root.plugin(LocalSandboxPolicy, { mode: 'read-only' })
  root.sessions.create({ id: 's1', cwd: project.path })
  const asked: ApprovalQuestion[] = []
  root.approval.answer((question) => {
    asked.push(question)
    return 'unavailable'
  })
  const run = (id: string, name: string, args: Record<string, unknown>) =>
    root.tools.executeCall(call(id, name, args), { signal: signal(), sessionId: 's1' })

  const target = join(outside.path, 'escaped.txt')
  const write = await run('c1', 'mcp__fs__write_file', { path: target, content: 'escaped' })
  expect(existsSync(target)).toBe(false)
  expect(write).toMatchObject({ isError: true, errorCode: 'APPROVAL_UNAVAILABLE', bodyInvoked: false })

  const read = await run('c2', 'mcp__fs__read_text_file', { path: join(trusted.path, 'a.txt') })
  expect(read).toMatchObject({ isError: false, content: [{ type: 'text', text: 'alpha\n' }] })

  const untrusted = await run('c3', 'mcp__proj__list_allowed_directories', {})
  expect(untrusted).toMatchObject({ isError: true, bodyInvoked: false })

  expect(asked.map((question) => [question.toolName, question.kind])).toEqual([
    ['mcp__fs__write_file', 'tool'],
    ['mcp__proj__list_allowed_directories', 'tool'],
  ])
  expect(asked[0]?.reason).toContain('read-only')
}, 60_000)
