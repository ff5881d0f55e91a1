/**
 * WebShop's reward (web_agent_site/engine/goal.py get_reward), term for term:
 *   total = (attributes matched + options matched + price ok) / (goal attributes + goal options + 1)
 *   total *= r_type
 * Fuzzy matching is fuzzball's port of TheFuzz (token_set_ratio > 85, force_ascii as TheFuzz).
 * spaCy's noun tagging of titles (type reward) is replaced by `titleNouns`, a documented heuristic.
 */
import { token_set_ratio } from 'fuzzball';

const FUZZ_OPTS = { force_ascii: true, full_process: true };
/** options compared exactly rather than fuzzily (goal.py EXACT_MATCH_OPTS) */
export const EXACT_MATCH_OPTS = ['size'];

// normalize.py COLOR_SET, in its order (the first colour contained wins)
const COLOR_SET = ('alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze brown burgundy ' +
  'camel camo caramel champagne charcoal cheetah chestnut chocolate christmas coffee cognac copper coral cranberry ' +
  'cream crystal dark denim eggplant elephant espresso fuchsia gold granite grape graphite grass gray green grey ' +
  'heather indigo ivory ivy khaki lavender lemon leopard light lilac lime magenta maroon mauve merlot midnight mint ' +
  'mocha multicolor mushroom mustard natural navy nude olive orange peach pewter pink plum purple rainbow red rose ' +
  'royal rust sand sapphire seashell silver skull slate steel stone stonewash sunflower tan taupe teal tiger ' +
  'turquoise violet walnut wheat white wine yellow').split(' ');

/** normalize.py normalize_color: the first COLOR_SET entry contained in the string, else the string. */
export function normalizeColor(s: string): string {
  for (const c of COLOR_SET) if (s.includes(c)) return c;
  return s;
}

export function tokenSetRatio(a: string, b: string): number {
  return token_set_ratio(a, b, FUZZ_OPTS);
}

// closed-class words (determiners, prepositions, conjunctions, pronouns, auxiliaries) that spaCy
// tags ADP/DET/CCONJ/PRON/AUX; only when written in lower case (see titleNouns)
const CLOSED = new Set(
  ('a an the and or nor but for with without of in on at to from by as into onto over under up down out off about ' +
    'per via vs than then so not no is are be was were been it its this that these those your my our their his her ' +
    'you we they he she i me us them all any each every some more most very too also only just can will').split(' '),
);
// who a product is for; titles use them as modifiers ("Mens Basketball Shoes"), not as the type
const AUDIENCE = new Set(['men', 'mens', "men's", 'women', 'womens', "women's", 'boys', "boy's", 'girls', "girl's", 'kids', "kid's", 'unisex']);
const SPLIT = /[\s,;:()[\]{}"/\\|!?*+&]+/;
const EDGE = /^[.\-'’#~]+|[.\-'’#~]+$/g;

/**
 * Stand-in for goal.py's spaCy step (tokens with pos_ in NOUN/PROPN), lowercased, in title order,
 * duplicates kept (goal.py divides by the list length). A token counts unless it
 *   - has no letter ("2", "3.1"),
 *   - is a closed-class word written in lower case ("for", "and"; capitalised ones in title-cased
 *     names, "Off White", are kept, as spaCy tags them PROPN there),
 *   - is a participle: five or more letters ending in "ed" but not "eed" ("Listed", "Padded";
 *     "Saireed" stays),
 *   - names an audience ("Mens", "Women's", "Unisex").
 */
export function titleNouns(title: string): string[] {
  const out: string[] = [];
  for (const raw of title.split(SPLIT)) {
    const t = raw.replace(EDGE, '');
    if (!/[a-zA-Z]/.test(t)) continue;
    const lower = t.toLowerCase();
    if (t === lower && CLOSED.has(lower)) continue;
    if (lower.length >= 5 && /[^e]ed$/.test(lower) && /^[a-z]+$/.test(lower)) continue;
    if (AUDIENCE.has(lower)) continue;
    out.push(lower);
  }
  return out;
}

/** What the reward reads from the purchased product (goal.py's dict keys). */
export interface RewardProduct {
  asin?: string;
  query?: string | null;
  product_category?: string | null;
  name: string;
  Attributes?: string[];
  Title?: string;
  /** a list, or (as one of WebShop's own tests passes) a string, joined as Python would */
  BulletPoints?: string[] | string;
  Description?: string;
}
export interface RewardGoal {
  asin?: string;
  query?: string | null;
  product_category?: string | null;
  name: string;
  attributes: string[];
  goal_options: Record<string, string> | string[];
  price_upper: number;
}

export interface TypeReward {
  r_type: number;
  query_match: boolean;
  category_match: boolean;
  title_score: number;
}

const sameAsin = (p: { asin?: string }, g: { asin?: string }): boolean => p.asin !== undefined && p.asin === g.asin;

/** goal.py get_type_reward. Unknown (null) query/category match only the goal's own product. */
export function getTypeReward(purchased: RewardProduct, goal: RewardGoal): TypeReward {
  const query_match =
    purchased.query != null && goal.query != null ? purchased.query === goal.query : sameAsin(purchased, goal);
  let category_match: boolean;
  if (purchased.product_category != null && goal.product_category != null) {
    const p = new Set(purchased.product_category.split('›').map((x) => x.trim()));
    const g = new Set(goal.product_category.split('›').map((x) => x.trim()));
    let n = 0;
    for (const x of p) if (g.has(x)) n++;
    category_match = n >= 2;
  } else category_match = sameAsin(purchased, goal);
  const pt = new Set(titleNouns(purchased.name));
  const dt = titleNouns(goal.name);
  const inter = new Set(dt.filter((t) => pt.has(t))).size;
  const title_score = dt.length === 0 ? 0.2 : inter / dt.length;
  let r_type = 1.0;
  if (!(query_match || category_match || title_score > 0.2)) r_type = 0.5;
  if (title_score < 0.1) r_type = 0.1;
  if (title_score === 0) r_type = 0.0;
  return { r_type, query_match, category_match, title_score };
}

const joinBullets = (b: string[] | string | undefined): string => (b === undefined ? '' : typeof b === 'string' ? [...b].join(' ') : b.join(' '));

/** goal.py get_attribute_reward → [r_attr, matches] */
export function getAttributeReward(purchased: RewardProduct, goal: Pick<RewardGoal, 'attributes'>): [number, number] {
  const pAttrs = purchased.Attributes ?? [];
  let n = 0;
  for (const g of goal.attributes) {
    let matched = false;
    for (const p of pAttrs) {
      if (tokenSetRatio(p, g) > 85) {
        n++;
        matched = true;
        break;
      }
    }
    if (
      !matched &&
      ((purchased.Title ?? '').toLowerCase().includes(g) ||
        joinBullets(purchased.BulletPoints).toLowerCase().includes(g) ||
        (purchased.Description ?? '').toLowerCase().includes(g))
    ) {
      n++;
    }
  }
  return [goal.attributes.length ? n / goal.attributes.length : NaN, n];
}

/**
 * goal.py get_option_reward → [r_option (null without goal options), matches]. Purchased options
 * as a dict (name → value; `size` compared exactly) or a bare list (all fuzzy, as the old tests).
 */
export function getOptionReward(
  purchased: RewardProduct,
  goalOptions: readonly string[],
  purchasedOptions: Record<string, string> | readonly string[],
): [number | null, number] {
  const entries: [string, string][] = Array.isArray(purchasedOptions)
    ? purchasedOptions.map((v, i) => [`#${i}`, normalizeColor(v)])
    : Object.entries(purchasedOptions as Record<string, string>).map(([k, v]) => [k, normalizeColor(v)]);
  const goals = goalOptions.map(normalizeColor);
  let n = 0;
  for (const [k, v] of entries) {
    let matched = false;
    if (EXACT_MATCH_OPTS.includes(k.toLowerCase())) {
      if (goals.includes(v)) {
        n++;
        matched = true;
      }
    } else {
      for (const g of goals) {
        if (tokenSetRatio(g, v) > 85) {
          n++;
          matched = true;
          break;
        }
      }
    }
    if (
      !matched &&
      ((purchased.Title ?? '').toLowerCase().includes(v) ||
        joinBullets(purchased.BulletPoints).toLowerCase().includes(v) ||
        (purchased.Description ?? '').toLowerCase().includes(v))
    ) {
      n++;
    }
  }
  return [goals.length > 0 ? n / goals.length : null, n];
}

export interface RewardInfo extends TypeReward {
  r_att: number;
  r_option: number | null;
  r_price: boolean | null;
  num_attr_matches: number;
  num_option_matches: number;
}

/** goal.py get_reward(purchased_product, goal, price, options) → [total, info] */
export function getReward(
  purchased: RewardProduct,
  goal: RewardGoal,
  price: number,
  options: Record<string, string> | readonly string[],
): [number, RewardInfo] {
  const t = getTypeReward(purchased, goal);
  const r_price = goal.price_upper > 0 ? price <= goal.price_upper : null;
  const [r_att, nAttr] = getAttributeReward(purchased, goal);
  const goalOpts = Array.isArray(goal.goal_options) ? goal.goal_options : Object.values(goal.goal_options);
  const [r_option, nOpt] = getOptionReward(purchased, goalOpts, options);
  // Python adds a bool as 0/1; a None price (limit ≤ 0) would raise there; we count it as 0
  let total = (nAttr + nOpt + (r_price ? 1 : 0)) / (goal.attributes.length + goalOpts.length + 1);
  total *= t.r_type;
  return [total, { ...t, r_att, r_option, r_price, num_attr_matches: nAttr, num_option_matches: nOpt }];
}
