/**
 * Loading: the vendored catalog and goals (envs/webshop/data, built by scripts/build-data.ts from
 * ReAct's 500 real episodes) or WebShop's own files in a user's directory:
 *   items_shuffle.json | items_shuffle_1000.json   products (web_agent_site/utils.py DEFAULT_FILE_PATH)
 *   items_ins_v2.json  | items_ins_v2_1000.json    asin → {attributes}
 *   items_human_ins.json                            asin → [{instruction, instruction_attributes, instruction_options}]
 * read as engine.py load_products and goal.py get_human_goals read them.
 */
import { readFileSync, existsSync } from 'node:fs';
import { join, dirname, basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../cluster/rng.ts';
import { WebshopBadDataError, WebshopMissingFileError, WebshopOptionError } from './errors.ts';
import { PyRandom } from './pyrandom.ts';
import { buildIndex } from './search.ts';
import { parsePriceTag, pyFloat, priceTagOf } from './text.ts';
import type { Goal, Product, Split, WebshopEnv } from './types.ts';
import { NO_PRICE_LIMIT } from './derive.ts';

export const VENDORED_DIR = join(dirname(fileURLToPath(import.meta.url)), 'data');
export const PRODUCTS_FORMAT = 'hr1-webshop-products/1';
export const GOALS_FORMAT = 'hr1-webshop-goals/1';

export interface LoadOpts {
  /** a directory with WebShop's items_*.json files; default: the vendored catalog */
  dataDir?: string;
  /** upstream only: seed for the price draws that WebShop leaves to an unseeded `random` (default 0) */
  seed?: number;
}

const cache = new Map<string, WebshopEnv>();

/** Load (and cache per source) the catalog, goals and search index. */
export function loadWebshop(opts: LoadOpts = {}): WebshopEnv {
  const key = `${opts.dataDir ?? '<vendored>'}#${opts.seed ?? 0}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const env = opts.dataDir === undefined ? loadVendored() : loadUpstream(opts.dataDir, opts.seed ?? 0);
  cache.set(key, env);
  return env;
}

function readJson(file: string): unknown {
  if (!existsSync(file)) throw new WebshopMissingFileError(`cannot read ${basename(file)}; rebuild it with envs/webshop/scripts/build-data.ts or pass dataDir`, file);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new WebshopBadDataError(`not valid JSON: ${(e as Error).message}; restore the file from git or the upstream release`, file, '<root>', e);
  }
}

function assemble(source: string, products: Product[], goals: Goal[], file: string): WebshopEnv {
  const byAsin = new Map(products.map((p) => [p.asin, p]));
  for (const g of goals)
    if (!byAsin.has(g.asin)) throw new WebshopBadDataError(`goal ${g.id} targets ASIN ${g.asin}, which the catalog lacks; rebuild the goals from the same data`, file, `goals[${g.id}].asin`);
  return { source, products, byAsin, goals, goalsById: new Map(goals.map((g) => [g.id, g])), index: buildIndex(products, file) };
}

export function loadVendored(dir = VENDORED_DIR): WebshopEnv {
  const pf = join(dir, 'products.json');
  const gf = join(dir, 'goals.json');
  const p = readJson(pf) as { format?: unknown; products?: unknown };
  if (p?.format !== PRODUCTS_FORMAT || !Array.isArray(p.products))
    throw new WebshopBadDataError(`expected {format: "${PRODUCTS_FORMAT}", products: [...]}; rebuild with envs/webshop/scripts/build-data.ts`, pf, 'format');
  const g = readJson(gf) as { format?: unknown; goals?: unknown };
  if (g?.format !== GOALS_FORMAT || !Array.isArray(g.goals))
    throw new WebshopBadDataError(`expected {format: "${GOALS_FORMAT}", goals: [...]}; rebuild with envs/webshop/scripts/build-data.ts`, gf, 'format');
  const products = p.products as Product[];
  products.forEach((x, i) => {
    if (typeof x?.asin !== 'string' || typeof x.title !== 'string' || typeof x.price !== 'number' || typeof x.options !== 'object')
      throw new WebshopBadDataError('a product needs asin, title, price and options; rebuild with envs/webshop/scripts/build-data.ts', pf, `products[${i}]`);
  });
  const goals = g.goals as Goal[];
  goals.forEach((x, i) => {
    if (typeof x?.id !== 'string' || typeof x.asin !== 'string' || typeof x.instruction !== 'string' || typeof x.priceUpper !== 'number')
      throw new WebshopBadDataError('a goal needs id, asin, instruction and priceUpper; rebuild with envs/webshop/scripts/build-data.ts', gf, `goals[${i}]`);
  });
  return assemble('vendored', products, goals, gf);
}

function pick(dir: string, names: string[]): string {
  for (const n of names) if (existsSync(join(dir, n))) return join(dir, n);
  throw new WebshopMissingFileError(`${dir} has none of ${names.join(', ')}; point dataDir at WebShop's data/ folder (setup.sh downloads it)`, join(dir, names[0]!));
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** engine.py load_products → Product[] (reviews.json is not read: ratings show N.A.). */
export function productsFromUpstream(raw: unknown, attrs: unknown, file: string, attrFile: string, seed = 0): Product[] {
  if (!Array.isArray(raw)) throw new WebshopBadDataError('expected a JSON array of products (WebShop items_shuffle format)', file, '<root>');
  if (!isObj(attrs)) throw new WebshopBadDataError('expected an object mapping ASIN → {attributes} (WebShop items_ins_v2 format)', attrFile, '<root>');
  const seen = new Set<string>();
  const out: Product[] = [];
  raw.forEach((p: unknown, i) => {
    const at = (f: string): string => `[${i}].${f}`;
    if (!isObj(p)) throw new WebshopBadDataError('a product must be an object', file, `[${i}]`);
    const asin = p.asin;
    if (typeof asin !== 'string') throw new WebshopBadDataError('asin must be a string', file, at('asin'));
    if (asin === 'nan' || asin.length > 10 || seen.has(asin)) return;
    seen.add(asin);
    if (typeof p.name !== 'string') throw new WebshopBadDataError(`product ${asin} has no name (its title); fix or drop the entry`, file, at('name'));
    const str = (f: string): string => {
      const v = p[f];
      if (v === undefined || v === null) return '';
      if (typeof v !== 'string') throw new WebshopBadDataError(`${f} of ${asin} must be a string`, file, at(f));
      return v;
    };
    const sd = p.small_description;
    const bullets = Array.isArray(sd) ? sd.map(String) : [typeof sd === 'string' ? sd : ''];
    let pricing: number[];
    let priceTag: string;
    if (typeof p.pricing === 'string' && p.pricing) {
      pricing = parsePriceTag(p.pricing);
      if (pricing.length === 0) throw new WebshopBadDataError(`pricing of ${asin} has no $ amount: ${JSON.stringify(p.pricing)}`, file, at('pricing'));
      priceTag = priceTagOf(pricing);
    } else {
      pricing = [100.0];
      priceTag = `$${pyFloat(100)}`;
    }
    const options: Record<string, string[]> = {};
    const co = p.customization_options;
    if (co !== undefined && co !== null && co !== '') {
      if (!isObj(co)) throw new WebshopBadDataError(`customization_options of ${asin} must map option names to [{value}]`, file, at('customization_options'));
      for (const [name, contents] of Object.entries(co)) {
        if (contents === null) continue;
        if (!Array.isArray(contents)) throw new WebshopBadDataError(`customization_options.${name} of ${asin} must be a list of {value}`, file, at(`customization_options.${name}`));
        options[name.toLowerCase()] = contents.map((c: unknown, k) => {
          if (!isObj(c) || typeof c.value !== 'string')
            throw new WebshopBadDataError(`option value must be {value: string}`, file, at(`customization_options.${name}[${k}].value`));
          return c.value.trim().replaceAll('/', ' | ').toLowerCase();
        });
      }
    }
    const a = attrs[asin];
    const attributes = isObj(a) && Array.isArray(a.attributes) ? a.attributes.map(String) : ['DUMMY_ATTR'];
    // generate_product_prices: a range draws uniformly (seeded here; unseeded upstream)
    const price = pricing.length === 1 ? pricing[0]! : pricing[0]! + new Rng(`webshop-price:${seed}:${asin}`).next() * (pricing[1]! - pricing[0]!);
    out.push({
      asin,
      title: p.name,
      priceTag,
      pricing,
      price,
      options,
      optionsKnown: true,
      description: str('full_description'),
      bullets,
      attributes,
      query: str('query').toLowerCase().trim(),
      productCategory: str('product_category'),
      category: str('category'),
      rating: 'N.A.',
    });
  });
  return out;
}

/** goal.py PRICE_RANGE */
const PRICE_RANGE = Array.from({ length: 99 }, (_, i) => 10 * (i + 1));

/** goal.py get_human_goals, then `random.seed(233); random.shuffle(goals)`. */
export function goalsFromUpstream(products: readonly Product[], human: unknown, file: string, seed = 0): Goal[] {
  if (!isObj(human)) throw new WebshopBadDataError('expected an object mapping ASIN → [{instruction, instruction_attributes, instruction_options}]', file, '<root>');
  const raw: Omit<Goal, 'id' | 'index' | 'split'>[] = [];
  const rng = new Rng(`webshop-goal-prices:${seed}`);
  for (const p of products) {
    const list = human[p.asin];
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw new WebshopBadDataError(`instructions of ${p.asin} must be a list`, file, p.asin);
    list.forEach((ins: unknown, k) => {
      const at = `${p.asin}[${k}]`;
      if (!isObj(ins) || typeof ins.instruction !== 'string') throw new WebshopBadDataError('an instruction needs an instruction string', file, `${at}.instruction`);
      const attributes = ins.instruction_attributes;
      if (!Array.isArray(attributes)) throw new WebshopBadDataError('instruction_attributes must be a list', file, `${at}.instruction_attributes`);
      if (attributes.length === 0) return; // skipped upstream too
      const opts = ins.instruction_options ?? {};
      let goalOptions: Record<string, string>;
      if (Array.isArray(opts)) goalOptions = Object.fromEntries(opts.map((v, n) => [`#${n}`, String(v)]));
      else if (isObj(opts)) goalOptions = Object.fromEntries(Object.entries(opts).map(([kk, v]) => [kk, String(v)]));
      else throw new WebshopBadDataError('instruction_options must be an object or a list', file, `${at}.instruction_options`);
      // price_upper: the larger of two draws among the first four multiples of 10 above the price
      const range = PRICE_RANGE.filter((x) => x > p.price).slice(0, 4);
      let priceUpper = NO_PRICE_LIMIT;
      let priceText = '';
      if (range.length >= 2) {
        const i1 = rng.int(range.length);
        let i2 = rng.int(range.length - 1);
        if (i2 >= i1) i2++;
        priceUpper = Math.max(range[i1]!, range[i2]!);
        priceText = `, and price lower than ${priceUpper.toFixed(2)} dollars`;
      }
      raw.push({
        instruction: ins.instruction.replace(/^\.+|\.+$/g, '') + priceText,
        asin: p.asin,
        name: p.title,
        query: p.query,
        productCategory: p.productCategory,
        attributes: attributes.map(String),
        goalOptions,
        priceUpper,
      });
    });
  }
  new PyRandom(233).shuffle(raw);
  return raw.map((g, index) => ({ ...g, id: `fixed_${index}`, index, split: upstreamSplit(index) }));
}

/** WebShop's human-goal splits by index: test 0–499, dev 500–1499, train 1500+. */
export function upstreamSplit(i: number): Split {
  return i < 500 ? 'test' : i < 1500 ? 'dev' : 'train';
}

export function loadUpstream(dir: string, seed = 0): WebshopEnv {
  if (!existsSync(dir)) throw new WebshopMissingFileError(`data directory ${dir} does not exist; pass WebShop's data/ folder`, dir);
  const pf = pick(dir, ['items_shuffle.json', 'items_shuffle_1000.json']);
  const af = pick(dir, ['items_ins_v2.json', 'items_ins_v2_1000.json']);
  const hf = pick(dir, ['items_human_ins.json']);
  const products = productsFromUpstream(readJson(pf), readJson(af), pf, af, seed);
  const goals = goalsFromUpstream(products, readJson(hf), hf, seed);
  return assemble(dir, products, goals, hf);
}

/** A goal by id (`fixed_12`), index, or the object itself. */
export function goalOf(env: WebshopEnv, goal: string | number | Goal): Goal {
  if (typeof goal === 'object') return goal;
  const g = typeof goal === 'number' ? env.goals.find((x) => x.index === goal) : env.goalsById.get(goal);
  if (!g) throw new WebshopOptionError('WEBSHOP_UNKNOWN_GOAL', `no goal ${JSON.stringify(goal)} in ${env.source} (${env.goals.length} goals; ids look like "${env.goals[0]?.id ?? 'fixed_0'}")`, 'goal');
  return g;
}
