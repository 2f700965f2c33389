import assert from 'node:assert/strict'
import { total } from './cart.js'

const cases = [
  [[], 0],
  [[{ price: 2.5, quantity: 4 }], 10],
  [
    [
      { price: 1.25, quantity: 2 },
      { price: 3, quantity: 1 },
    ],
    5.5,
  ],
]

let failed = 0
for (const [items, expected] of cases) {
  try {
    assert.equal(total(items), expected)
    console.log(`ok   total(${JSON.stringify(items)}) = ${expected}`)
  } catch {
    failed++
    console.log(`FAIL total(${JSON.stringify(items)}) = ${total(items)}, expected ${expected}`)
  }
}
if (failed > 0) {
  console.log(`${failed} of ${cases.length} tests failed`)
  process.exit(1)
}
console.log(`all ${cases.length} tests passed`)
