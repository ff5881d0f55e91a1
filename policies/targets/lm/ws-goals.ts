/**
 * Synthetic WebShop training goals, so a model learns to copy the instruction instead of
 * memorising the 91 training goals' searches.
 *
 * A model cloned from the shopper on the 91 `train` goals alone writes the searches of training
 * goals on test goals (`search[buy three pack fine combs good styling dry]` for a USB microphone):
 * with so few instructions, memorising each one's query is easier than copying. WebShop itself
 * trains on thousands of instructions written from product attributes; these are written from
 * products no `test` or `dev` goal targets: a span of the title's words, some of the product's
 * options ("in the color redwood", "in size large"), a price limit above its price, in the
 * phrasings the real instructions use. The reward scores them like real goals (type, options,
 * price; no attributes, as the vendored goals have none). Deterministic for the Rng passed in.
 */
import type { Rng } from '../../../cluster/rng.ts';
import type { Goal, WebshopEnv } from '../../../envs/webshop/index.ts';
import { lowPrice } from './shopper.ts';

const OPENERS = ["i'm looking for", 'i am looking for', 'i want', 'i need', 'i would like', 'find me', 'locate', 'get me', 'i want to buy', 'show me'];
const STOP = new Set('a an and are as at be but by for from has have i in is it its of on or that the this to with'.split(' '));


/** One option's phrase in the instruction. */
function optionPhrase(rng: Rng, name: string, value: string): string {
  if (name === 'color') return rng.pick([`in ${value} color`, `in the color ${value}`, `${value} colored`]);
  if (name === 'size') return rng.pick([`in size ${value}`, `${value} size`, `in a size ${value}`]);
  return rng.pick([`with ${name} ${value}`, `${value}`, `in ${value}`]);
}

/**
 * `n` synthetic goals over products that no non-train goal targets (ids `synth_<k>`, split
 * `train`), drawn with `rng`.
 */
export function synthGoals(ws: WebshopEnv, rng: Rng, n: number): Goal[] {
  const held = new Set(ws.goals.filter((g) => g.split !== 'train').map((g) => g.asin));
  const pool = ws.products.filter((p) => !held.has(p.asin) && p.title.trim() !== '');
  const out: Goal[] = [];
  for (let k = 0; k < n; k++) {
    const p = pool[rng.int(pool.length)]!;
    const words = (p.title.toLowerCase().match(/[a-z0-9]+(?:[-'][a-z0-9]+)*/g) ?? []).filter((w) => !STOP.has(w));
    const start = rng.int(Math.min(3, Math.max(1, words.length - 2)));
    const span = words.slice(start, start + 3 + rng.int(5));
    const goalOptions: Record<string, string> = {};
    const phrases: string[] = [];
    for (const [name, values] of Object.entries(p.options)) {
      if (values.length === 0 || !rng.chance(0.7)) continue;
      const v = rng.pick(values);
      // a value that several groups hold is clicked into the last of them: name that group
      const key = Object.entries(p.options).filter(([, vs]) => vs.includes(v)).at(-1)![0];
      if (key !== name) continue;
      goalOptions[name] = v;
      phrases.push(optionPhrase(rng, name, v));
    }
    const limit = Math.max(10, Math.ceil(((p.pricing.length ? lowPrice(p) : 0) * (1.1 + 1.4 * rng.next())) / 10) * 10);
    const thing = span.join(' ');
    const article = /^[aeiou]/.test(thing) ? 'an' : 'a';
    const instruction = `${rng.pick(OPENERS)} ${article} ${thing}${phrases.length ? `, ${phrases.join(' and ')}` : ''}, and price lower than ${limit.toFixed(2)} dollars`;
    out.push({
      id: `synth_${k}`,
      index: 1_000_000 + k,
      split: 'train',
      instruction,
      asin: p.asin,
      name: p.title,
      query: p.query,
      productCategory: p.productCategory,
      attributes: [],
      goalOptions,
      priceUpper: limit,
    });
  }
  return out;
}

/** `ws` with `goals` added (a copy; the loaded env is not changed). */
export function withGoals(ws: WebshopEnv, goals: readonly Goal[]): WebshopEnv {
  return { ...ws, goals: [...ws.goals, ...goals], goalsById: new Map([...ws.goalsById, ...goals.map((g) => [g.id, g] as const)]) };
}
