// The wire table is the only way onto a wire: every public operation of the session host is either
// used by a table entry or listed here with the reason it stays off the wire; every RPC method and
// every web route comes from the table; every entry is on both wires or says why not.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, expectTypeOf, it } from 'vitest'
import type { AttachmentInput } from '../../src/host/index.js'
import { CONNECTION_METHODS, RPC_OPERATIONS } from '../../src/rpc/server.js'
import { matchRoute, WEB_ROUTES } from '../../src/web/routes.js'
import { type OperationName, type OperationParams, operations } from '../../src/wire/operations.js'

const source = (path: string) => readFileSync(fileURLToPath(new URL(path, import.meta.url)), 'utf8')

/** Host members that are no wire operation of their own, and why. */
const OFF_WIRE: Record<string, string> = {
  cwd: 'the default directory: the web sends it in the host baseline, RPC in the initialize result',
  answersQuestions: 'a capability, reported by initialize (RPC) and by questions arriving (web)',
  attached: 'in-process: surfaces look up an agent they already drive',
  agents: 'in-process: the attached agents of this host',
  owns: 'in-process: RPC marks root agents in agent/lifecycle notifications with it',
  release: 'the wires release on disconnect/close; no client asks for it',
  sharedStore: 'in-process: the web host polls the list when it is true',
  latest: 'the CLI’s `--continue`; clients pick from session/list',
  statusOf: 'streamed: web session/state frames, RPC agent/status notifications',
  inboxOf: 'streamed: web session/baseline and session/state frames',
  jobsOf: 'streamed: web session/baseline and session/state frames',
  modeOf: 'streamed: web session/state frames',
  modes: 'streamed: the web host baseline',
  presetOf: 'streamed: web session/state frames; RPC results carry `preset`',
  presetLocked: 'in-process: the terminal UI greys its picker with it',
  subscribe: 'the event streams themselves (web session stream, RPC session/event notifications)',
  approvals: 'streamed: the web host baseline; RPC approval/requested notifications',
  questions: 'streamed: the web host baseline; RPC question/requested notifications',
  persistent: 'in-process: the headless runner says whether `--continue` can find the session later',
  flush: 'in-process: the headless runner makes the log durable before it exits',
  closed: 'in-process lifecycle',
  close: 'in-process lifecycle: the wire closes its host when the client goes',
}

/** The public members of `SessionHost`, read from its source (methods, getters, readonly fields). */
function hostMembers(): string[] {
  const file = ts.createSourceFile('host.ts', source('../../src/host/host.ts'), ts.ScriptTarget.Latest, true)
  const members: string[] = []
  file.forEachChild((node) => {
    if (!ts.isClassDeclaration(node) || node.name?.text !== 'SessionHost') return
    for (const member of node.members) {
      if (ts.isConstructorDeclaration(member) || !member.name || !ts.isIdentifier(member.name)) continue
      const modifiers = ts.canHaveModifiers(member) ? (ts.getModifiers(member) ?? []) : []
      if (modifiers.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword))
        continue
      members.push(member.name.text)
    }
  })
  return members
}

describe('the wire table', () => {
  it('maps every public host operation, or says why it stays off the wire', () => {
    const members = hostMembers()
    expect(members.length).toBeGreaterThan(20)
    // The handlers and the helpers only they call.
    const handlers = source('../../src/wire/operations.ts') + source('../../src/web/session-api.ts')
    const used = new Set([...handlers.matchAll(/\bhost\.(\w+)/g)].map((m) => m[1]))
    const unmapped = members.filter((name) => !used.has(name) && !(name in OFF_WIRE))
    expect(unmapped, 'host members with no wire operation and no reason in OFF_WIRE').toEqual([])
    const stale = Object.keys(OFF_WIRE).filter((name) => !members.includes(name) || used.has(name))
    expect(stale, 'OFF_WIRE names that are gone from the host or now on the wire').toEqual([])
  })

  it('puts every entry on RPC and the web, or says why not', () => {
    for (const [name, operation] of Object.entries(operations)) {
      const wires = [operation.rpc, operation.web]
      expect(
        wires.some((wire) => wire === true || 'path' in wire),
        `${name} is on no wire`,
      ).toBe(true)
      for (const wire of wires) {
        if (typeof wire === 'object' && 'off' in wire)
          expect(wire.off.length, `${name} needs a reason`).toBeGreaterThan(10)
      }
    }
  })

  it('serves exactly the table over RPC, besides the connection’s own methods', () => {
    const rpcNames = (Object.keys(operations) as OperationName[]).filter((name) => operations[name].rpc === true)
    expect([...RPC_OPERATIONS].sort()).toEqual(rpcNames.sort())
    // Every RPC handler of the server is a table entry or a connection method (`initialize`, `shutdown`).
    const server = source('../../src/rpc/server.ts')
    const literal = /const handlers: Record<string, RpcHandler> = \{([^}]*)\}/.exec(server)?.[1] ?? ''
    const handlers = [...literal.matchAll(/^\s*'?([\w/-]+)'?:/gm)].map((m) => m[1])
    expect(handlers.sort()).toEqual([...CONNECTION_METHODS].sort())
  })

  it('routes every web call through the table, one route per method and path', () => {
    const webNames = (Object.keys(operations) as OperationName[]).filter((name) => 'path' in operations[name].web)
    expect(WEB_ROUTES.map((route) => route.name)).toEqual(webNames)
    const keys = WEB_ROUTES.map((route) => `${route.method} ${route.path}`)
    expect(new Set(keys).size).toBe(keys.length)
    for (const route of WEB_ROUTES) {
      const path = route.segments.map((segment) => (segment.startsWith(':') ? 'x1' : segment)).join('/')
      expect(matchRoute(route.method, path)?.route.name).toBe(route.name)
    }
    // The server has no hand route of its own under /api besides streams, blobs and client-module files.
    const server = source('../../src/web/server.ts')
    expect(server).not.toMatch(/method === 'POST' &&/)
    expect(server).not.toMatch(/\.route\(/)
  })

  it('reads the params types off the schemas', () => {
    expectTypeOf<OperationParams<'prompt'>>().toEqualTypeOf<{
      sessionId: string
      text: string
      attachments?: AttachmentInput[]
      confirm?: boolean
    }>()
    expectTypeOf<OperationParams<'approval/respond'>['decision']>().toEqualTypeOf<'allowed-once' | 'rejected'>()
    expectTypeOf<OperationParams<'session/fork'>['at']>().toEqualTypeOf<number | undefined>()
  })

  it('names in the Python client are methods of the RPC wire', () => {
    const python = ['client.py', 'connection.py']
      .map((file) => source(`../../../../python/dsh_client/${file}`))
      .join('\n')
    const called = [...python.matchAll(/self\.(?:request|_call|_send)\("([\w/-]+)"/g)].map((m) => m[1] as string)
    expect(called.length).toBeGreaterThan(5)
    const served = new Set<string>([...RPC_OPERATIONS, ...CONNECTION_METHODS])
    expect(called.filter((name) => !served.has(name))).toEqual([])
  })
})
