// Images and embedded resources in ACP prompts, sent with the ACP SDK's client to the built `dsh acp`:
// the image must reach the model request as an image part, the resource's text as context, and the
// log must hold only the image's reference.
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as acp from '@agentclientprotocol/sdk'
import { completionResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { expect, it } from 'vitest'
import { durableEvents, editor, untilStop } from './editor.js'

// A 1x1 PNG (what an editor sends when a screenshot is pasted into the prompt).
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAADElEQVQImWNgMD4DAAE2AQDyHVEtAAAAAElFTkSuQmCC',
  'base64',
)

it('an ACP image prompt reaches the model as an image part; an embedded resource as context', {
  timeout: 90_000,
}, async () => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-acp-img-'))
  const patch = join(home, 'empty.yml')
  writeFileSync(patch, '[]\n')
  await using server = await startMockLlmServer({ responses: [completionResponse({ text: 'A single pixel.' })] })
  const client = editor({ home, modelUrl: server.url, patch, env: { DSH_MODEL: 'deepseek-flash' } })
  try {
    const init = await client.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION })
    expect(init.agentCapabilities?.promptCapabilities).toMatchObject({ image: true, embeddedContext: true })
    const session = await client.agent.buildSession(home).start()
    void session.prompt([
      { type: 'text', text: 'what is in this screenshot?' },
      { type: 'image', data: PNG.toString('base64'), mimeType: 'image/png' },
      {
        type: 'resource',
        resource: { uri: 'file:///notes.md', text: 'the pixel is the logo', mimeType: 'text/markdown' },
      },
    ])
    const { stopReason } = await untilStop(session)
    expect(stopReason).toBe('end_turn')
    type Part = { type: string; text?: string; image_url?: { url: string } }
    const messages = (server.requests[0] as RecordedRequest).body.messages as Array<{ content: string | Part[] }>
    const parts = messages.flatMap((message) => (Array.isArray(message.content) ? message.content : []))
    expect(parts.filter((part) => part.type === 'image_url')).toEqual([
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
    ])
    expect(parts.some((part) => part.text?.includes('the pixel is the logo'))).toBe(true)
    const logged = JSON.stringify(
      durableEvents(home, session.sessionId).filter((event) => event.type === 'user/message'),
    )
    expect(logged).toContain(`sha256:${createHash('sha256').update(PNG).digest('hex')}`)
    expect(logged).not.toContain(PNG.toString('base64'))

    // Bytes that are not an image the store accepts are refused with the reason, and nothing runs.
    await expect(
      session.prompt([{ type: 'image', data: Buffer.from('not an image').toString('base64'), mimeType: 'image/png' }]),
    ).rejects.toMatchObject({ code: -32602, data: { code: 'ATTACHMENT_TYPE_UNSUPPORTED' } })
    expect(server.requests).toHaveLength(1)
  } finally {
    client.proc.stdin.end()
    await client.exited
    rmSync(home, { recursive: true, force: true })
  }
})
