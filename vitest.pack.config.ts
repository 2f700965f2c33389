import { defineConfig } from 'vitest/config'

// `npm run test:pack`: packs every workspace package and installs the CLI and the SDK from the tarballs
// away from the checkout (test/pack). Slow (minutes: a real npm install), so not part of `npm test`.
export default defineConfig({
  resolve: { conditions: ['source'] },
  test: {
    include: ['test/pack/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 600_000,
  },
})
