// The store conformance suite (suites/conformance.ts) on the two local providers.
import { jsonlFixture, sqliteFixture } from './helpers.js'
import { conformanceSuite } from './suites/conformance.js'

for (const fixture of [jsonlFixture, sqliteFixture]) conformanceSuite(fixture)
