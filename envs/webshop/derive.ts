/**
 * The shipped catalog and goals, derived from ReAct's 500 real WebShop episodes (goals 0–499 run
 * against WebShop's full catalog). Pure: the build script and the tests call it.
 *
 * Products: every ASIN shown on a results page (ASIN, title, price text) or opened (item page:
 * title, price text, option groups in page order). Goals: episodes whose Buy Now scored 1.0, as
 * (instruction, bought ASIN, options clicked on its page, price limit from the instruction).
 */
import { createHash } from 'node:crypto';
import { Rng } from '../../cluster/rng.ts';
import type { Goal, Product, Split } from './types.ts';
import { parsePriceTag } from './text.ts';

export interface Episode {
  session: string;
  goal_index: number;
  instruction_text: string;
  reward_shown: number | null;
  steps: { action: string; observation: string }[];
}

export interface ParsedItem {
  title: string;
  priceTag: string;
  options: Record<string, string[]>;
}
export interface ParsedResults {
  page: number;
  total: number;
  products: { asin: string; title: string; priceTag: string }[];
}

const lines = (obs: string): string[] =>
  obs
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/** ReAct's rendering of a results page → its products (ReAct shows the first 3 of each page). */
export function parseReactResults(obs: string): ParsedResults | null {
  const ls = lines(obs);
  const head = ls.findIndex((l) => /^Page \d+ \(Total results: \d+\)$/.test(l));
  if (ls[0] !== '[Back to Search]' || head < 0) return null;
  const m = /^Page (\d+) \(Total results: (\d+)\)$/.exec(ls[head]!)!;
  const products: ParsedResults['products'] = [];
  for (let i = head + 1; i < ls.length; i++) {
    const a = /^\[([A-Z0-9]{10})\]$/.exec(ls[i]!);
    if (!a || i + 2 >= ls.length + 0 || !ls[i + 2]?.startsWith('$')) continue;
    products.push({ asin: a[1]!, title: ls[i + 1]!, priceTag: ls[i + 2]! });
    i += 2;
  }
  return { page: Number(m[1]), total: Number(m[2]), products };
}

/** ReAct's rendering of an item page (`color [a][b]` lines, then title, Price, Rating, buttons). */
export function parseReactItem(obs: string): ParsedItem | null {
  const ls = lines(obs);
  if (ls[0] !== '[Back to Search]' || ls[1] !== '[< Prev]') return null;
  const pi = ls.findIndex((l) => l.startsWith('Price: '));
  if (pi < 3) return null;
  const options: Record<string, string[]> = {};
  for (const l of ls.slice(2, pi - 1)) {
    const k = l.indexOf(' [');
    if (k < 0 || !l.endsWith(']')) return null;
    const name = l.slice(0, k);
    const values = [...l.slice(k + 1).matchAll(/\[\[?([^\]]*)\]?\]/g)].map((x) => x[1]!);
    options[name] = values;
  }
  return { title: ls[pi - 1]!, priceTag: ls[pi]!.slice('Price: '.length), options };
}

/** Deterministic split by the goal id's SHA-256: 60% train, 20% dev, 20% test. */
export function splitOf(id: string): Split {
  const h = parseInt(createHash('sha256').update(`webshop:${id}`).digest('hex').slice(0, 8), 16) % 10;
  return h < 6 ? 'train' : h < 8 ? 'dev' : 'test';
}

export const NO_PRICE_LIMIT = 1000000;
export function priceLimitOf(instruction: string): number {
  const m = /, and price lower than (\d+(?:\.\d+)?) dollars$/.exec(instruction);
  return m ? Number(m[1]) : NO_PRICE_LIMIT;
}

export interface DeriveStats {
  episodes: number;
  rewardOne: number;
  products: number;
  productsWithItemPage: number;
  productsWithOptions: number;
  rangePriced: number;
  goals: number;
  goalsWithOptions: number;
  goalsDropped: { session: string; why: string }[];
  instructionMatchesHumanGoal: number;
  splits: Record<Split, number>;
}

export function deriveFromEpisodes(episodes: readonly Episode[], human: readonly string[]): {
  products: Product[];
  goals: Goal[];
  stats: DeriveStats;
} {
  const seen = new Map<string, { title: string; priceTag: string; item: ParsedItem | null }>();
  const order: string[] = [];
  const note = (asin: string, title: string, priceTag: string, item: ParsedItem | null): void => {
    const cur = seen.get(asin);
    if (!cur) {
      order.push(asin);
      seen.set(asin, { title, priceTag, item });
    } else if (item && !cur.item) seen.set(asin, { title: item.title, priceTag: item.priceTag, item });
  };
  type Raw = { ep: Episode; asin: string; options: Record<string, string> };
  const bought: Raw[] = [];
  const dropped: DeriveStats['goalsDropped'] = [];
  for (const ep of episodes) {
    let asin: string | null = null;
    let options: Record<string, string> = {};
    let buy: Raw | null = null;
    for (const { action, observation } of ep.steps) {
      const res = parseReactResults(observation);
      if (res) {
        for (const p of res.products) note(p.asin, p.title, p.priceTag, null);
        asin = null;
        options = {};
        continue;
      }
      const click = /^click\[(.*)\]$/.exec(action)?.[1];
      if (click === undefined) continue;
      const item = parseReactItem(observation);
      if (item && /^[A-Z0-9]{10}$/.test(click)) {
        note(click, item.title, item.priceTag, item);
        asin = click;
        options = {};
      } else if (observation === `You have clicked ${click}.` && asin) {
        // WebShop keys an option click by the last group holding the value
        const groups = seen.get(asin)?.item?.options ?? {};
        let name: string | null = null;
        for (const [k, vs] of Object.entries(groups)) if (vs.includes(click)) name = k;
        if (name) options[name] = click;
      } else if (click === 'Buy Now' && asin && observation.startsWith('Your score')) {
        buy = { ep, asin, options: { ...options } };
      }
    }
    if (ep.reward_shown === 1) {
      if (buy) bought.push(buy);
      else dropped.push({ session: ep.session, why: 'scored 1.0 but no item page precedes Buy Now' });
    }
  }
  // the tightest price limit of any goal on a product bounds its drawn price (reward 1 ⇒ price ok)
  const limitOf = new Map<string, number>();
  for (const b of bought) limitOf.set(b.asin, Math.min(limitOf.get(b.asin) ?? Infinity, priceLimitOf(b.ep.instruction_text)));
  const products: Product[] = order.map((asin) => {
    const s = seen.get(asin)!;
    const pricing = parsePriceTag(s.priceTag);
    let price = pricing[0]!;
    if (pricing.length === 2) {
      const hi = Math.min(pricing[1]!, limitOf.get(asin) ?? Infinity);
      price = Math.floor((pricing[0]! + new Rng(`webshop-price:${asin}`).next() * (hi - pricing[0]!)) * 100) / 100;
    }
    return {
      asin,
      title: s.title,
      priceTag: s.priceTag,
      pricing,
      price,
      options: s.item?.options ?? {},
      optionsKnown: s.item !== null,
      description: '',
      bullets: [],
      attributes: [],
      query: null,
      productCategory: null,
      category: null,
      rating: 'N.A.',
    };
  });
  const byAsin = new Map(products.map((p) => [p.asin, p]));
  const goals: Goal[] = [];
  let humanMatch = 0;
  for (const b of bought) {
    const p = byAsin.get(b.asin)!;
    const priceUpper = priceLimitOf(b.ep.instruction_text);
    if (!(p.price <= priceUpper)) {
      dropped.push({ session: b.ep.session, why: `price ${p.price} above the limit ${priceUpper}` });
      continue;
    }
    const h = human[b.ep.goal_index];
    const bare = (x: string): string => x.replace(/['"]/g, '');
    if (h !== undefined && bare(b.ep.instruction_text).startsWith(bare(h.trim().replace(/^\.+|\.+$/g, '')))) humanMatch++;
    goals.push({
      id: b.ep.session,
      index: b.ep.goal_index,
      split: splitOf(b.ep.session),
      instruction: b.ep.instruction_text,
      asin: b.asin,
      name: p.title,
      query: null,
      productCategory: null,
      attributes: [],
      goalOptions: b.options,
      priceUpper,
    });
  }
  const splits = { train: 0, dev: 0, test: 0 };
  for (const g of goals) splits[g.split]++;
  return {
    products,
    goals,
    stats: {
      episodes: episodes.length,
      rewardOne: episodes.filter((e) => e.reward_shown === 1).length,
      products: products.length,
      productsWithItemPage: products.filter((p) => p.optionsKnown).length,
      productsWithOptions: products.filter((p) => Object.keys(p.options).length > 0).length,
      rangePriced: products.filter((p) => p.pricing.length === 2).length,
      goals: goals.length,
      goalsWithOptions: goals.filter((g) => Object.keys(g.goalOptions).length > 0).length,
      goalsDropped: dropped,
      instructionMatchesHumanGoal: humanMatch,
      splits,
    },
  };
}
