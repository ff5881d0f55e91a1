/** Text helpers shared by the loader and the pages: Python's float repr and WebShop's price tags. */

/** Python's str(float): shortest round-trip digits, integers with ".0" (100.0, 9.98, 1e-05 aside). */
export function pyFloat(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  return String(x);
}

/** `$9.98` → [9.98]; `$10.99 to $20.99` → [10.99, 20.99] (engine.py: digits and dots of each `$` part). */
export function parsePriceTag(tag: string): number[] {
  const parts = tag.split('$').slice(1).map((s) => Number(s.replace(/[^\d.]/g, '')));
  return parts.filter((n) => Number.isFinite(n)).slice(0, 2);
}

/** engine.py price tag from pricing floats. */
export function priceTagOf(pricing: readonly number[]): string {
  if (pricing.length === 0) return '$100.0';
  if (pricing.length === 1) return `$${pyFloat(pricing[0]!)}`;
  return `$${pyFloat(pricing[0]!)} to $${pyFloat(pricing[1]!)}`;
}
