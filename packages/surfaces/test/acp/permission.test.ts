// The tool call a permission request shows, from an approval question and the call's announced view.
import type { ApprovalQuestion } from '@dsh/agent/approval'
import { describe, expect, it } from 'vitest'
import { permissionToolCall } from '../../src/acp/permission.js'

const question = (fields: Partial<ApprovalQuestion>): ApprovalQuestion => ({
  requestId: 'r1',
  policy: 'ask',
  askedAt: 0,
  summary: 'Write /p/a.txt',
  toolCallId: 'c1',
  ...fields,
})
const diff = { kind: 'diff', title: 'Write a.txt', path: '/p/a.txt', after: 'new' } as const

describe('permissionToolCall', () => {
  it('sends only the title when there is neither a grant nor a reason (the announced diff stays)', () => {
    expect(permissionToolCall(question({ kind: 'tool' }), diff)).toEqual({
      toolCallId: 'c1',
      title: 'Write /p/a.txt',
      status: 'pending',
    })
  })

  it('keeps the diff first and adds the policy reason after it', () => {
    expect(permissionToolCall(question({ kind: 'tool', reason: 'writes outside src/' }), diff).content).toEqual([
      { type: 'diff', path: '/p/a.txt', oldText: null, newText: 'new' },
      { type: 'content', content: { type: 'text', text: 'Reason: writes outside src/' } },
    ])
  })

  it('names an escalation grant in the title and the text', () => {
    const asked = question({
      kind: 'escalation',
      summary: 'Run `make` with wider sandbox permissions',
      reason: 'make writes to /usr/local',
      details: { from: 'read-only', to: 'workspace-write', justification: 'make writes to /usr/local' },
    })
    const call = permissionToolCall(asked, { kind: 'terminal', title: 'Run `make`', command: 'make' })
    expect(call.title).toBe('Run `make` with wider sandbox permissions (read-only -> workspace-write)')
    expect(call.content?.at(-1)).toEqual({
      type: 'content',
      content: {
        type: 'text',
        text: "Grants workspace-write for this one call (the session's sandbox is read-only).\nReason: make writes to /usr/local",
      },
    })
  })
})
