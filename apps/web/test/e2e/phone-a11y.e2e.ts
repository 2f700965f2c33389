// The page on a phone (390x844): the session list collapses behind a labelled toggle, a session is
// created and used from the composer, and nothing scrolls sideways, even with a wide code block and
// table. Then every control has an accessible name as Chromium computes it (its accessibility tree),
// and Tab walks the controls in the order they are on the page.
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import type { Page } from 'playwright-core'
import { expect, it } from 'vitest'
import { shots, webFixture } from './support'

const fixture = webFixture('dsh-web-phone-')

/** How far the page scrolls sideways (0 when it does not). */
const sideways = (page: Page) =>
  page.evaluate(() => {
    const root = (
      globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
    ).document.documentElement
    return root.scrollWidth - root.clientWidth
  })

const WIDE = `${'x'.repeat(300)}`

it('is usable at phone width: a toggle for the session list, the composer, no sideways scroll', async () => {
  const page = await fixture.browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })
  await page.goto(fixture.web.url)
  const toggle = page.getByRole('button', { name: 'open the session list' })
  await toggle.waitFor()
  expect(await page.locator('.sidebar').isVisible()).toBe(false)
  expect(await sideways(page)).toBeLessThanOrEqual(0)
  await toggle.click()
  await page.locator('.sidebar').waitFor()
  expect(await page.getByRole('button', { name: 'close the session list' }).getAttribute('aria-expanded')).toBe('true')
  await page.locator(`input[aria-label="working directory"][placeholder*=${JSON.stringify(fixture.work)}]`).waitFor()
  await page.getByRole('button', { name: 'New session' }).click()
  await page.waitForURL(/#\/s\//)
  // Opening a session closes the panel.
  await page.locator('.sidebar').waitFor({ state: 'hidden' })
  fixture.server.enqueue(
    completionResponse({
      text: `A wide answer:\n\n\`\`\`\n${WIDE}\n\`\`\`\n\n| a | b |\n| --- | --- |\n| ${WIDE} | ${WIDE} |\n\nand ${WIDE}`,
    }),
  )
  const composer = page.getByRole('textbox', { name: 'message' })
  const box = await composer.boundingBox()
  expect(box && box.x >= 0 && box.x + box.width <= 390).toBe(true)
  await composer.fill('Say something wide')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('.node.assistant:not(.streaming)', { hasText: 'A wide answer' }).waitFor()
  expect(await sideways(page)).toBeLessThanOrEqual(0)
  // Nor does the conversation itself: only the code block and the table scroll, inside the answer.
  expect(await page.locator('.conversation').evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0)
  const send = await page.getByRole('button', { name: 'Send' }).boundingBox()
  expect(send && send.y + send.height <= 844).toBe(true)
  await page.screenshot({ path: join(shots, 'phone-390.png') })
  // The settings page fits too.
  await page.goto(`${fixture.web.url}#/settings`)
  await page.locator('.settings').waitFor()
  expect(await sideways(page)).toBeLessThanOrEqual(0)
  await page.close()
})

/** Controls in Chromium's accessibility tree that have no accessible name. */
async function unnamedControls(page: Page): Promise<string[]> {
  const cdp = await page.context().newCDPSession(page)
  const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as {
    nodes: Array<{ ignored: boolean; role?: { value: string }; name?: { value: string } }>
  }
  await cdp.detach()
  const controls = new Set(['button', 'textbox', 'combobox', 'checkbox', 'link', 'searchbox', 'radio', 'listbox'])
  return nodes
    .filter((node) => !node.ignored && controls.has(node.role?.value ?? '') && !node.name?.value?.trim())
    .map((node) => node.role?.value ?? '')
}

it('names every control and moves focus in page order', async () => {
  fixture.server.enqueue(
    completionResponse({
      toolCalls: [
        { id: 'call_bg', name: 'bash', arguments: JSON.stringify({ command: 'sleep 30', run_in_background: true }) },
      ],
    }),
    completionResponse({ text: 'Running.' }),
  )
  const page = await fixture.browser.newPage({ viewport: { width: 1280, height: 860 } })
  await page.goto(fixture.web.url)
  await page.locator(`input[aria-label="working directory"][placeholder*=${JSON.stringify(fixture.work)}]`).waitFor()
  await page.click('#new-session')
  await page.waitForURL(/#\/s\//)
  await page.fill('textarea[aria-label=message]', 'Start something')
  await page.click('button.send')
  await page.locator('.node.assistant', { hasText: 'Running.' }).waitFor()
  await page.locator('.jobs .job button.job-toggle').click()
  await page.locator('.job-output').waitFor()
  expect(await unnamedControls(page)).toEqual([])
  await page.goto(`${fixture.web.url}#/settings`)
  await page.locator('.settings').waitFor()
  await page.waitForTimeout(300)
  expect(await unnamedControls(page)).toEqual([])
  await page.goBack()
  await page.locator('textarea[aria-label=message]').waitFor()
  // No positive tabindex anywhere, and Tab visits the focusable controls in document order.
  expect(await page.locator('[tabindex]:not([tabindex="0"]):not([tabindex="-1"])').count()).toBe(0)
  await page.evaluate(() =>
    (
      globalThis as unknown as { document: { activeElement: { blur?(): void } | null } }
    ).document.activeElement?.blur?.(),
  )
  const visited: Array<{ index: number; name: string }> = []
  for (let step = 0; step < 80; step++) {
    await page.keyboard.press('Tab')
    const at = await page.evaluate(() => {
      interface El {
        getAttribute(name: string): string | null
        textContent: string | null
      }
      const doc = (
        globalThis as unknown as {
          document: { activeElement: El | null; body: El; querySelectorAll(s: string): Iterable<El> }
        }
      ).document
      const active = doc.activeElement
      if (!active || active === doc.body) return { index: -1, name: '' }
      const name = active.getAttribute('aria-label') ?? active.textContent?.trim() ?? ''
      return { index: [...doc.querySelectorAll('*')].indexOf(active), name }
    })
    if (at.index < 0 || visited.some((seen) => seen.index === at.index)) break
    visited.push(at)
  }
  expect(visited.length).toBeGreaterThan(5)
  const indices = visited.map((seen) => seen.index)
  expect(indices).toEqual([...indices].sort((a, b) => a - b))
  // The composer is reached, and its Send button after it.
  const names = visited.map((seen) => seen.name)
  expect(names).toContain('message')
  expect(names.indexOf('Send')).toBeGreaterThan(names.indexOf('message'))
  await page.close()
})
