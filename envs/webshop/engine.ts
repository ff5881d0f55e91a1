/**
 * WebShop's text mode (web_agent_text_env.py, observation_mode='text'), as pure functions over
 * plain-data state: the visible texts of the page joined with ` [SEP] `; `search[kw]` from any page,
 * `click[x]` where x (lowercased) names a clickable of the page; anything else does nothing.
 */
import { Rng } from '../../cluster/rng.ts';
import { WebshopOptionError } from './errors.ts';
import { goalOf } from './data.ts';
import { getReward, type RewardInfo } from './reward.ts';
import { pyFloat } from './text.ts';
import type { Goal, Product, Split, WebshopEnv } from './types.ts';

/** engine.py PRODUCT_WINDOW */
export const PRODUCT_WINDOW = 10;
export const END_BUTTON = 'Buy Now';
export const NEXT_PAGE = 'Next >';
export const PREV_PAGE = '< Prev';
export const BACK_TO_SEARCH = 'Back to Search';
export const SUB_PAGES = ['Description', 'Features', 'Reviews', 'Attributes'] as const;
export type SubPage = (typeof SUB_PAGES)[number];
export const SEP = ' [SEP] ';

/** Step limits in the literature: ReAct 15 iterations, AgentBench v0.2 10 rounds, AgentBench main 20. */
export const PROTOCOLS = {
  react: { maxSteps: 15 },
  'agentbench-v0.2': { maxSteps: 10 },
  'agentbench-main': { maxSteps: 20 },
} as const;
export type ProtocolName = keyof typeof PROTOCOLS;
/** @default 'react' */
export const DEFAULT_PROTOCOL: ProtocolName = 'react';

export type PageKind = 'search' | 'results' | 'item' | 'sub' | 'done';

/** Everything an episode needs besides the read-only env: plain JSON, replayable anywhere. */
export interface WebshopState {
  goal: string;
  instruction: string;
  page: PageKind;
  keywords: string | null;
  /** ASINs of the last search, best first (at most 50) */
  results: string[];
  pageNum: number;
  asin: string | null;
  options: Record<string, string>;
  sub: SubPage | null;
  /** ASINs opened this episode */
  asins: string[];
  showAttrs: boolean;
  protocol: ProtocolName | 'custom';
  steps: number;
  maxSteps: number;
  done: boolean;
  reward: number;
}

export interface ResetOpts {
  /** step limit by protocol (default react: 15) */
  protocol?: ProtocolName;
  /** overrides the protocol's limit */
  maxSteps?: number;
  /** show the Attributes button on item pages (WebShop show_attrs; default false) */
  showAttrs?: boolean;
  /** with no goal given: the seed that picks one from `split` */
  seed?: number;
  split?: Split;
}

export interface Available {
  has_search_bar: boolean;
  clickables: string[];
}

export interface StepInfo extends Available {
  /** false when the action did nothing (unparsable, unknown clickable, empty search) */
  valid: boolean;
  page: PageKind;
  /** reward components on Buy Now (goal.py verbose info) */
  reward?: RewardInfo;
  /** reward === 1 on Buy Now */
  success: boolean;
  /** the step limit ended the episode */
  limit: boolean;
}
export interface ResetResult {
  state: WebshopState;
  observation: string;
  info: Available & { goal: string; split: Split };
}
export interface StepResult {
  state: WebshopState;
  observation: string;
  reward: number;
  done: boolean;
  info: StepInfo;
}

/** engine.py parse_action: `(.+)\[(.+)\]`, greedy, from the start. */
export function parseAction(action: string): [string, string | null] {
  const m = /^(.+)\[(.+)\]/s.exec(action);
  return m ? [m[1]!, m[2]!] : [action, null];
}

export function reset(env: WebshopEnv, goal: string | number | Goal | null | undefined, opts: ResetOpts = {}): ResetResult {
  let g: Goal;
  if (goal === null || goal === undefined) {
    const pool = opts.split ? env.goals.filter((x) => x.split === opts.split) : env.goals;
    if (pool.length === 0) throw new WebshopOptionError('WEBSHOP_UNKNOWN_GOAL', `no goals in split ${opts.split}; use train, dev or test`, 'split');
    g = new Rng(`webshop-goal:${opts.seed ?? 0}`).pick(pool);
  } else g = goalOf(env, goal);
  const protocol = opts.protocol ?? DEFAULT_PROTOCOL;
  if (!(protocol in PROTOCOLS)) throw new WebshopOptionError('WEBSHOP_BAD_OPTION', `opts.protocol must be one of ${Object.keys(PROTOCOLS).join(', ')}; got ${JSON.stringify(protocol)}`, 'protocol');
  if (opts.maxSteps !== undefined && !(Number.isInteger(opts.maxSteps) && opts.maxSteps > 0))
    throw new WebshopOptionError('WEBSHOP_BAD_OPTION', `opts.maxSteps must be a positive integer; got ${opts.maxSteps}`, 'maxSteps');
  const state: WebshopState = {
    goal: g.id,
    instruction: g.instruction,
    page: 'search',
    keywords: null,
    results: [],
    pageNum: 1,
    asin: null,
    options: {},
    sub: null,
    asins: [],
    showAttrs: opts.showAttrs ?? false,
    protocol: opts.maxSteps !== undefined ? 'custom' : protocol,
    steps: 0,
    maxSteps: opts.maxSteps ?? PROTOCOLS[protocol].maxSteps,
    done: false,
    reward: 0,
  };
  return { state, observation: observe(env, state), info: { ...available(env, state), goal: g.id, split: g.split } };
}

function productOf(env: WebshopEnv, asin: string | null): Product {
  const p = asin === null ? undefined : env.byAsin.get(asin);
  if (!p) throw new WebshopOptionError('WEBSHOP_BAD_STATE', `state names product ${JSON.stringify(asin)}, which this catalog lacks; replay states only on the catalog they came from`, 'asin');
  return p;
}

const pageProducts = (s: WebshopState): string[] => s.results.slice((s.pageNum - 1) * PRODUCT_WINDOW, s.pageNum * PRODUCT_WINDOW);

/** The page's visible texts, in order (the text observation is these joined with ` [SEP] `). */
export function pageTexts(env: WebshopEnv, s: WebshopState): string[] {
  const instr = ['Instruction:', s.instruction];
  switch (s.page) {
    case 'search':
      return ['WebShop', ...instr, 'Search'];
    case 'results': {
      const t = [...instr, BACK_TO_SEARCH, `Page ${s.pageNum} (Total results: ${s.results.length})`];
      if (s.pageNum > 1) t.push(PREV_PAGE);
      if (s.pageNum * PRODUCT_WINDOW < s.results.length) t.push(NEXT_PAGE);
      for (const a of pageProducts(s)) {
        const p = productOf(env, a);
        t.push(p.asin, p.title, p.priceTag);
      }
      return t;
    }
    case 'item': {
      const p = productOf(env, s.asin);
      const t = [...instr, BACK_TO_SEARCH, PREV_PAGE];
      for (const [name, values] of Object.entries(p.options)) t.push(name, ...values);
      t.push(p.title, `Price: ${p.priceTag}`, `Rating: ${p.rating}`, 'Description', 'Features', 'Reviews');
      if (s.showAttrs) t.push('Attributes');
      t.push(END_BUTTON);
      return t;
    }
    case 'sub': {
      const p = productOf(env, s.asin);
      const t = [...instr, BACK_TO_SEARCH, PREV_PAGE];
      if (s.sub === 'Description') t.push(p.description || 'No Description');
      else if (s.sub === 'Features') t.push(...(p.bullets.length ? p.bullets : ['No Features']));
      else if (s.sub === 'Attributes') t.push(...p.attributes);
      return t;
    }
    case 'done':
      return [
        'Thank you for shopping with us!',
        'Your code:',
        '(Paste it in your MTurk interface.)',
        'Purchased',
        'asin',
        s.asin ?? '',
        'options',
        JSON.stringify(s.options).replaceAll('":"', '": "').replaceAll('","', '", "'),
        'Your score (min 0.0, max 1.0)',
        pyFloat(s.reward),
      ];
  }
}

export function observe(env: WebshopEnv, s: WebshopState): string {
  return pageTexts(env, s)
    .map((t) => t.trim())
    .filter((t) => t !== '')
    .join(SEP);
}

/** get_available_actions: clickables lowercased, buttons and product links in page order, then options. */
export function available(env: WebshopEnv, s: WebshopState): Available {
  switch (s.page) {
    case 'search':
      return { has_search_bar: true, clickables: ['search'] };
    case 'results': {
      const c = [BACK_TO_SEARCH.toLowerCase()];
      if (s.pageNum > 1) c.push(PREV_PAGE.toLowerCase());
      if (s.pageNum * PRODUCT_WINDOW < s.results.length) c.push(NEXT_PAGE.toLowerCase());
      for (const a of pageProducts(s)) c.push(a.toLowerCase());
      return { has_search_bar: false, clickables: c };
    }
    case 'item': {
      const p = productOf(env, s.asin);
      const c = [BACK_TO_SEARCH, PREV_PAGE, 'Description', 'Features', 'Reviews', ...(s.showAttrs ? ['Attributes'] : []), END_BUTTON].map((x) => x.toLowerCase());
      for (const values of Object.values(p.options)) for (const v of values) if (!c.includes(v)) c.push(v);
      return { has_search_bar: false, clickables: c };
    }
    case 'sub':
      return { has_search_bar: false, clickables: [BACK_TO_SEARCH.toLowerCase(), PREV_PAGE.toLowerCase()] };
    case 'done':
      return { has_search_bar: false, clickables: [] };
  }
}

function checkState(s: WebshopState): void {
  if (typeof s !== 'object' || s === null || typeof s.goal !== 'string' || typeof s.steps !== 'number' || !Array.isArray(s.results))
    throw new WebshopOptionError('WEBSHOP_BAD_STATE', 'state is not a WebshopState; pass the state a reset() or step() returned', 'state');
}

/** One action. Pure: returns a new state; the input state is not changed. */
export function step(env: WebshopEnv, state: WebshopState, action: string): StepResult {
  checkState(state);
  if (state.done) {
    return { state, observation: observe(env, state), reward: 0, done: true, info: { ...available(env, state), valid: false, page: state.page, success: false, limit: false } };
  }
  const s: WebshopState = { ...state, options: { ...state.options }, asins: [...state.asins], steps: state.steps + 1 };
  const clickables = available(env, state).clickables;
  let [name, arg] = parseAction(action);
  if (arg !== null) arg = arg.toLowerCase();
  let valid = true;
  let rewardInfo: RewardInfo | undefined;
  if (name === 'search' && arg !== null && arg !== '') {
    // SimBrowser.search splits on ' ', search_results joins with ' ' again
    s.keywords = arg;
    s.results = env.index.search(arg);
    s.page = 'results';
    s.pageNum = 1;
    s.asin = null;
    s.options = {};
    s.sub = null;
  } else if (name === 'click' && arg !== null && arg !== 'search' && clickables.includes(arg)) {
    if (arg === END_BUTTON.toLowerCase()) {
      const g = goalOf(env, s.goal);
      const p = productOf(env, s.asin);
      const [r, info] = getReward(
        { asin: p.asin, query: p.query, product_category: p.productCategory, name: p.title, Attributes: p.attributes, Title: p.title, BulletPoints: p.bullets, Description: p.description },
        { asin: g.asin, query: g.query, product_category: g.productCategory, name: g.name, attributes: g.attributes, goal_options: g.goalOptions, price_upper: g.priceUpper },
        p.price,
        s.options,
      );
      rewardInfo = info;
      s.reward = r;
      s.done = true;
      s.page = 'done';
    } else if (arg === BACK_TO_SEARCH.toLowerCase()) {
      Object.assign(s, { page: 'search', keywords: null, results: [], pageNum: 1, asin: null, options: {}, sub: null, asins: [] });
    } else if (arg === NEXT_PAGE.toLowerCase() && s.page === 'results') {
      s.pageNum++;
    } else if (arg === PREV_PAGE.toLowerCase() && s.page === 'results') {
      s.pageNum--;
    } else if (arg === PREV_PAGE.toLowerCase() && s.page === 'sub') {
      s.page = 'item';
      s.sub = null;
    } else if (arg === PREV_PAGE.toLowerCase() && s.page === 'item') {
      s.page = 'results';
      s.asin = null;
      s.options = {};
    } else if (SUB_PAGES.some((k) => k.toLowerCase() === arg)) {
      s.page = 'sub';
      s.sub = SUB_PAGES.find((k) => k.toLowerCase() === arg)!;
    } else if (s.page === 'results') {
      s.asin = arg.toUpperCase();
      if (!s.asins.includes(s.asin)) s.asins.push(s.asin);
      s.page = 'item';
    } else if (s.page === 'item') {
      // text_to_clickable keeps the last radio input with this value
      let key: string | null = null;
      for (const [k, vs] of Object.entries(productOf(env, s.asin).options)) if (vs.includes(arg)) key = k;
      if (key !== null) s.options[key] = arg;
    }
  } else valid = false;
  let limit = false;
  if (!s.done && s.steps >= s.maxSteps) {
    s.done = true;
    limit = true;
  }
  const reward = rewardInfo ? s.reward : 0;
  return {
    state: s,
    observation: observe(env, s),
    reward,
    done: s.done,
    info: { ...available(env, s), valid, page: s.page, ...(rewardInfo ? { reward: rewardInfo } : {}), success: rewardInfo !== undefined && s.reward === 1, limit },
  };
}
