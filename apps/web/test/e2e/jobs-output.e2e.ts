// A background job's output streams into the page while it runs, and watching it does not move the
// model's read cursor: the model's later `job_output` (in the durable log) still starts at line 1.
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import { expect, it } from 'vitest'
import { loggedToolResult, newSession, shots, webFixture } from './support'

const fixture = webFixture('dsh-web-jobs-')

it("streams a background job's output into the page without moving the model's cursor", async () => {
  const command = 'for i in 1 2 3 4 5 6; do echo "tick $i"; sleep 0.6; done'
  fixture.server.enqueue(
    completionResponse({
      toolCalls: [{ id: 'call_bg', name: 'bash', arguments: JSON.stringify({ command, run_in_background: true }) }],
    }),
    completionResponse({ text: 'It runs in the background.' }),
    // The finished job wakes the agent: it reads the output through its own cursor.
    completionResponse({ toolCalls: [{ id: 'call_out', name: 'job_output', arguments: '{"job_id":"job-1"}' }] }),
    completionResponse({ text: 'Read the output.' }),
  )
  const page = await fixture.browser.newPage({ viewport: { width: 1280, height: 860 } })
  const sessionId = await newSession(page, fixture.web.url, fixture.work)
  await page.fill('textarea[aria-label=message]', 'Count in the background')
  await page.click('button.send')
  const row = page.locator('.jobs .job[data-job=job-1]')
  await row.locator('button.job-toggle').click()
  const output = row.locator('.job-output pre')
  // Lines appear while the job still runs: the second is shown before the last was printed.
  await output.filter({ hasText: 'tick 2' }).waitFor()
  const early = (await output.textContent()) ?? ''
  expect(early).not.toContain('tick 6')
  expect(await row.getAttribute('class')).toContain('running')
  await page.screenshot({ path: join(shots, 'jobs-output.png') })
  await output.filter({ hasText: 'tick 6' }).waitFor({ timeout: 20_000 })
  expect(((await output.textContent()) ?? '').match(/tick \d/g)).toEqual([1, 2, 3, 4, 5, 6].map((i) => `tick ${i}`))
  // The model's read after the page watched the whole run still starts at the first byte.
  await page.locator('.node.assistant', { hasText: 'Read the output.' }).waitFor({ timeout: 30_000 })
  const text = loggedToolResult(fixture.home, sessionId, 'call_out')
  expect(text).toContain('tick 1\ntick 2\ntick 3\ntick 4\ntick 5\ntick 6')
  await page.close()
})
