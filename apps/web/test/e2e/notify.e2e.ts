// Browser notifications (issue 38): with the permission granted, an approval that waits while the page
// is hidden shows a system notification naming the action, and a click on it opens the session; while
// the page is in view, none is shown (the page itself asks). The page's calls of the Notification API
// are recorded by wrapping it (headless Chromium has no notification center to read back).
import { completionResponse } from '@dsh/test-support'
import { expect, it } from 'vitest'
import { newSession, startAskWriteWeb, webFixture } from './support'

const fixture = webFixture('dsh-web-notify-', startAskWriteWeb)

const write = (id: string, path: string) =>
  completionResponse({ toolCalls: [{ id, name: 'write', arguments: JSON.stringify({ path, content: 'x\n' }) }] })

it('notifies of a waiting approval only while the page is hidden', async () => {
  const context = await fixture.browser.newContext({ viewport: { width: 1280, height: 800 } })
  await context.grantPermissions(['notifications'], { origin: new URL(fixture.web.url).origin })
  // Runs in the page before its scripts: records every notification and makes visibility settable.
  await context.addInitScript(`
    window.__notes = []
    window.__hidden = false
    Object.defineProperty(document, 'visibilityState', { get: () => (window.__hidden ? 'hidden' : 'visible') })
    const Real = window.Notification
    window.Notification = class extends Real {
      constructor(title, options) {
        window.__notes.push({ title, body: options && options.body, tag: options && options.tag })
        super(title, options)
      }
    }
  `)
  const page = await context.newPage()
  fixture.server.enqueue(
    write('seen', 'seen.txt'),
    write('away', 'away.txt'),
    completionResponse({ text: 'Both written.' }),
  )
  const sessionId = await newSession(page, fixture.web.url, fixture.work)
  await page.fill('textarea[aria-label=message]', 'Write two files')
  await page.click('button.send')
  // In view: the page asks, no system notification.
  await page.locator('.node.tool[data-tool=write] button.allow').first().waitFor()
  expect(await page.evaluate('window.__notes')).toEqual([])
  await page.evaluate('window.__hidden = true')
  await page.locator('.node.tool[data-tool=write] button.allow').first().click()
  await expect.poll(() => page.evaluate('window.__notes.length'), { timeout: 15_000 }).toBe(1)
  const [note] = (await page.evaluate('window.__notes')) as Array<{ title: string; body: string; tag: string }>
  expect(note?.title).toBe('dsh: approval needed')
  expect(note?.body).toContain('away.txt')
  expect(note?.tag).toBe(sessionId)
  await context.close()
}, 60_000)
