// The page's look, pinned (issue 31): one session with a user message, a tool card that ran, the
// assistant's answer and a write waiting on its approval card, rendered in Chromium at 1280 and 390 px,
// light and dark, and compared pixel by pixel (pixelmatch, with a tolerance) against the reference
// screenshots committed in `test/e2e/screenshots/`. A layout regression fails here; a change meant to
// alter the look re-records the references with `DSH_UPDATE_SCREENSHOTS=1 npm run test:e2e -- look`.
// What differs between runs (the temp directory, the session id) is rewritten to fixed text; animations are off.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse } from '@dsh/test-support'
import pixelmatch from 'pixelmatch'
import { PNG } from 'pngjs'
import { beforeAll, expect, it } from 'vitest'
import { newSession, shots, startAskWriteWeb, webFixture } from './support'

const fixture = webFixture('dsh-web-look-', startAskWriteWeb)
const references = fileURLToPath(new URL('./screenshots/', import.meta.url))
const update = process.env.DSH_UPDATE_SCREENSHOTS === '1'
/** Share of pixels allowed to differ (anti-aliasing noise), and pixelmatch's per-pixel colour threshold. */
const TOLERANCE = 0.005
const THRESHOLD = 0.1

let sessionId = ''

/**
 * Runs in the page: replaces each `[from, to]` in every text node and in inputs' placeholders, values
 * and titles. Passed as source text (this file is type-checked without the DOM library).
 */
function stabilize(pairs: Array<[string, string]>): void {
  const doc = (globalThis as unknown as { document: PageDocument }).document
  const swap = (text: string) => pairs.reduce((out, [from, to]) => out.split(from).join(to), text)
  const walker = doc.createTreeWalker(doc.body, 4)
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeValue) node.nodeValue = swap(node.nodeValue)
  }
  for (const element of doc.querySelectorAll('[placeholder], [title], input')) {
    for (const attribute of ['placeholder', 'title']) {
      const value = element.getAttribute(attribute)
      if (value) element.setAttribute(attribute, swap(value))
    }
    if (typeof element.value === 'string') element.value = swap(element.value)
  }
}

interface PageNode {
  nodeValue: string | null
}
interface PageElement {
  getAttribute(name: string): string | null
  setAttribute(name: string, value: string): void
  value?: string
}
interface PageDocument {
  body: unknown
  createTreeWalker(root: unknown, show: number): { nextNode(): PageNode | null }
  querySelectorAll(selector: string): Iterable<PageElement>
}

beforeAll(async () => {
  writeFileSync(join(fixture.work, 'notes.txt'), 'Buy milk.\nCall the plumber.\n')
  const page = await fixture.browser.newPage({ viewport: { width: 1280, height: 800 } })
  fixture.server.enqueue(
    completionResponse({
      toolCalls: [{ id: 'call_read', name: 'read', arguments: JSON.stringify({ path: 'notes.txt' }) }],
    }),
    completionResponse({ text: 'The notes list two errands: **buy milk** and *call the plumber*.' }),
    completionResponse({
      toolCalls: [
        { id: 'call_write', name: 'write', arguments: JSON.stringify({ path: 'hello.txt', content: 'hello\n' }) },
      ],
    }),
  )
  sessionId = await newSession(page, fixture.web.url, fixture.work)
  const composer = page.getByRole('textbox', { name: 'message' })
  await composer.fill('Read notes.txt and summarise it')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('.node.assistant:not(.streaming)', { hasText: 'two errands' }).waitFor()
  await composer.fill('Write hello.txt')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('.node.tool[data-tool=write] button.allow').waitFor()
  await page.close()
})

for (const width of [1280, 390]) {
  for (const colorScheme of ['light', 'dark'] as const) {
    it(`looks as recorded at ${width} px, ${colorScheme}`, async () => {
      const page = await fixture.browser.newPage({
        viewport: { width, height: 800 },
        colorScheme,
        reducedMotion: 'reduce',
        ...(width < 600 ? { isMobile: true, hasTouch: true } : {}),
      })
      await page.goto(`${fixture.web.url}#/s/${sessionId}`)
      await page.locator('.node.tool[data-tool=write] button.allow').waitFor()
      await page.locator('.node.assistant:not(.streaming)', { hasText: 'two errands' }).waitFor()
      // Settle: web fonts (none are fetched, Chromium's own) and one more frame after layout.
      await page.evaluate('document.fonts.ready.then(() => new Promise((r) => requestAnimationFrame(() => r(0))))')
      // Nothing scrolls sideways. On a phone Chromium widens the layout viewport to fit what overflows
      // (the title's actions made innerWidth 426 at 390 px), so both are held to the width asked for.
      const sizes = (await page.evaluate(
        '({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth })',
      )) as { scroll: number; inner: number }
      expect(sizes).toEqual({ scroll: width, inner: width })
      // What differs between runs (the temp directory, the session id) is written the same every time,
      // so the layout around it is what the reference recorded; nothing else on the page is touched.
      await page.evaluate(
        `(${stabilize.toString()})(${JSON.stringify([
          [fixture.home, '/tmp/dsh-web-look-000000'],
          [sessionId, '00000000-0000-4000-8000-000000000000'],
          [sessionId.slice(0, 8), '00000000'],
        ])})`,
      )
      const name = `look-${width}-${colorScheme}.png`
      const actual = await page.screenshot({
        animations: 'disabled',
        caret: 'hide',
      })
      await page.close()
      writeFileSync(join(shots, name), actual)
      const referencePath = join(references, name)
      if (update || !existsSync(referencePath)) {
        if (!update) throw new Error(`no reference ${name}: record it with DSH_UPDATE_SCREENSHOTS=1`)
        mkdirSync(references, { recursive: true })
        writeFileSync(referencePath, actual)
        return
      }
      const got = PNG.sync.read(actual)
      const want = PNG.sync.read(readFileSync(referencePath))
      expect(`${got.width}x${got.height}`).toBe(`${want.width}x${want.height}`)
      const diff = new PNG({ width: got.width, height: got.height })
      const differing = pixelmatch(got.data, want.data, diff.data, got.width, got.height, { threshold: THRESHOLD })
      if (differing / (got.width * got.height) > TOLERANCE)
        writeFileSync(join(shots, `diff-${name}`), PNG.sync.write(diff))
      expect(
        differing / (got.width * got.height),
        `${differing} pixels differ; see .artifacts/screenshots/diff-${name}`,
      ).toBeLessThanOrEqual(TOLERANCE)
    })
  }
}
