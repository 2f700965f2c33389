import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: {
    // Tests import workspace packages from source (package.json "source" condition), not from dist.
    conditions: ['source'],
  },
  test: {
    include: [
      'packages/*/test/**/*.test.ts',
      'apps/*/test/**/*.test.ts',
      'examples/*/test/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    // The pack-and-install test is slow (a real npm install): `npm run test:pack` (vitest.pack.config.ts).
    exclude: ['test/pack/**', '**/node_modules/**'],
    // Generous: many tests spawn the built CLI, which boots slowly on a loaded 2-core machine. A hang still fails.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
