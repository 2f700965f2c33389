import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: {
    // Tests import workspace packages from source (package.json "source" condition), not from dist.
    conditions: ['source'],
  },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
