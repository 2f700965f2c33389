// A subagent's transcript opens from the parent's `task` card while the parent still runs: the
// child's session is followed read-only (no resume, so no SESSION_BUSY), and what the page shows is
// what the child's durable log holds.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import { expect, it } from 'vitest'
import { newSession, shots, webFixture } from './support'

const fixture = webFixture('dsh-web-subagent-')

/** The text blocks of a logged message, joined. */
function textOf(message: { content?: Array<{ type: string; text?: string }> } | undefined): string {
  return (message?.content ?? []).flatMap((block) => (block.type === 'text' ? [block.text ?? ''] : [])).join('')
}

interface LoggedLine {
  type: string
  data: {
    callId?: string
    childSession?: string
    origin?: string
    message?: { content?: Array<{ type: string; text?: string }> }
  }
}

function logOf(id: string): LoggedLine[] {
  return readFileSync(join(fixture.home, 'sessions', `${id}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line) as LoggedLine)
}

it("opens a subagent's transcript read-only from the parent's task card while the parent runs", async () => {
  fixture.server.enqueue(
    completionResponse({
      toolCalls: [
        {
          id: 'call_task',
          name: 'task',
          arguments: JSON.stringify({ prompt: 'Count the files in the project.', description: 'count files' }),
        },
      ],
    }),
    // The child's one answer streams slowly, so the parent is still running while it is watched.
    completionResponse({ text: ['The child ', 'counted ', 'three ', 'files.'], delayMs: 700 }),
    completionResponse({ text: 'The subagent counted three files.' }),
  )
  const page = await fixture.browser.newPage({ viewport: { width: 1280, height: 860 } })
  const parentId = await newSession(page, fixture.web.url, fixture.work)
  await page.fill('textarea[aria-label=message]', 'Delegate the counting')
  await page.click('button.send')
  const card = page.locator('.node.tool[data-tool=task]')
  const open = card.locator('button.task-open')
  await open.waitFor()
  await page.locator('.session[data-status=running]').waitFor({ state: 'attached' })
  await open.click()
  const transcript = card.locator('.child-transcript')
  await transcript.locator('.node.user .bubble').waitFor()
  // Opened while the parent runs: no error (a resume would have been refused with SESSION_BUSY).
  expect(await page.locator('.session').getAttribute('data-status')).toBe('running')
  expect(await page.locator('.toast').count()).toBe(0)
  await transcript.locator('.node.assistant:not(.streaming)', { hasText: 'three files.' }).waitFor({ timeout: 30_000 })
  await page.locator('.node.assistant', { hasText: 'The subagent counted three files.' }).waitFor()
  await page.screenshot({ path: join(shots, 'subagent-transcript.png') })

  // What the page shows is the child's durable log.
  const started = logOf(parentId).find((event) => event.type === 'subagent/started')
  expect(started?.data.callId).toBe('call_task')
  const childId = started?.data.childSession as string
  expect(await card.locator('.task-card').getAttribute('data-child')).toBe(childId)
  const child = logOf(childId)
  const asked = child
    .filter((event) => event.type === 'user/message' && !event.data.origin)
    .map((e) => textOf(e.data.message))
  const answered = child.filter((event) => event.type === 'assistant/message').map((e) => textOf(e.data.message))
  expect(asked.join('')).toContain('Count the files in the project.')
  expect(await transcript.locator('.node.user .bubble').allTextContents()).toEqual(asked)
  expect(answered).toEqual(['The child counted three files.'])
  expect((await transcript.locator('.node.assistant .md').allTextContents()).map((text) => text.trim())).toEqual(
    answered,
  )
  await page.close()
})
