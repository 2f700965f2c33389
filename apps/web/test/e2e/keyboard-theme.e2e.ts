// The page without a mouse and in the dark: a keyboard-only flow from a new session to an answered
// approval (the file is then on disk), the theme following an emulated `prefers-color-scheme`, and a
// Markdown answer with a table and a link whose unsafe target stays text.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import { expect, it } from 'vitest'
import { shots, startAskWriteWeb, webFixture } from './support'

const fixture = webFixture('dsh-web-keys-', startAskWriteWeb)

it('goes from a new session to an approved write with the keyboard only', async () => {
  const page = await fixture.browser.newPage({ viewport: { width: 1280, height: 800 } })
  fixture.server.enqueue(
    completionResponse({
      toolCalls: [{ id: 'call_k', name: 'write', arguments: JSON.stringify({ path: 'keys.txt', content: 'typed\n' }) }],
    }),
    completionResponse({
      text: 'Done:\n\n| file | lines |\n| :--- | ---: |\n| keys.txt | 1 |\n\n[docs](https://example.com/d) and [bad](javascript:alert(1))',
    }),
  )
  await page.goto(fixture.web.url)
  // Pressed as soon as the page is up, before the host baseline named the directory: not lost.
  await page.locator('#new-session').waitFor()
  await page.keyboard.press('Alt+KeyN')
  await page.waitForURL(/#\/s\//)
  await page.keyboard.press('/')
  expect(await page.evaluate(`document.activeElement?.getAttribute('aria-label')`)).toBe('message')
  await page.keyboard.type('Write keys.txt')
  await page.keyboard.press('Enter')
  await page.locator('.node.tool[data-tool=write] button.allow').waitFor()
  expect(existsSync(join(fixture.work, 'keys.txt'))).toBe(false)
  await page.keyboard.press('Alt+KeyA')
  await page.locator('.node.tool[data-tool=write] .decision', { hasText: 'allowed once' }).waitFor()
  // The answer is Markdown: a table (alignment kept) and one safe link; the javascript: one is text.
  const answer = page.locator('.node.assistant:not(.streaming) .md').last()
  await answer.locator('table').waitFor()
  expect(readFileSync(join(fixture.work, 'keys.txt'), 'utf8')).toBe('typed\n')
  await expect(answer.locator('td').allTextContents()).resolves.toEqual(['keys.txt', '1'])
  expect(await answer.locator('td').nth(1).getAttribute('style')).toMatch(/text-align: right/)
  await expect(answer.locator('a').evaluateAll((links) => links.map((a) => a.getAttribute('href')))).resolves.toEqual([
    'https://example.com/d',
  ])
  expect(await answer.textContent()).toContain('[bad](javascript:alert(1))')
  await page.close()
})

it('follows the system theme: dark when prefers-color-scheme is dark', async () => {
  const background = async (colorScheme: 'light' | 'dark') => {
    const page = await fixture.browser.newPage({ viewport: { width: 1280, height: 800 }, colorScheme })
    await page.goto(fixture.web.url)
    await page.locator('.sessions a').first().click()
    await page.locator('.node.assistant').first().waitFor()
    await page.screenshot({ path: join(shots, `theme-${colorScheme}.png`) })
    // A string: this file is type-checked without the DOM library.
    const colors = (await page.evaluate(`({
      page: getComputedStyle(document.documentElement).backgroundColor,
      card: getComputedStyle(document.querySelector('.node.assistant')).backgroundColor,
    })`)) as { page: string; card: string }
    await page.close()
    return colors
  }
  const luminance = (rgb: string) => {
    const [r = 0, g = 0, b = 0] = (rgb.match(/\d+/g) ?? []).map(Number)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
  }
  const light = await background('light')
  const dark = await background('dark')
  expect(luminance(light.page)).toBeGreaterThan(200)
  expect(luminance(light.card)).toBeGreaterThan(200)
  expect(luminance(dark.page)).toBeLessThan(60)
  expect(luminance(dark.card)).toBeLessThan(60)
})
