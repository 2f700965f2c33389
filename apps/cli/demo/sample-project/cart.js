// A tiny shopping cart. `total` should add up price * quantity for every item.
export function total(items) {
  let sum = 0
  for (const item of items) {
    sum += item.price + item.quantity
  }
  return Math.round(sum * 100) / 100
}
