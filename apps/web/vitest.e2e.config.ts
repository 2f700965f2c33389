// The slow end-to-end suite (`npm run test:e2e`): the built `dsh web` driven by Debian's Chromium.
// Kept out of `npm test` (its include pattern is `*.test.ts`; these files are `*.e2e.ts`).
import { defineConfig } from 'vitest/config'

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['source'] },
  test: {
    include: ['test/e2e/**/*.e2e.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
})
