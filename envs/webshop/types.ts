/** Data shapes of the WebShop env: products, goals, the loaded env. All plain JSON. */
import type { SearchIndex } from './search.ts';

/** One product as the env shows and scores it (WebShop's load_products fields, renamed). */
export interface Product {
  asin: string;
  /** WebShop `Title` (also `name`, the type-reward title) */
  title: string;
  /** the shown price text: `$9.98`, or `$10.99 to $20.99` for a range (Python float repr) */
  priceTag: string;
  /** [price] or [low, high] */
  pricing: number[];
  /** the price the reward compares with the goal's limit (WebShop: a draw in the range) */
  price: number;
  /** option name (lowercased) → values (lowercased, `/` shown as ` | `), in page order */
  options: Record<string, string[]>;
  /** false when the catalog does not know the options (shipped products never opened in ReAct's runs) */
  optionsKnown: boolean;
  description: string;
  bullets: string[];
  /** WebShop `Attributes` (items_ins_v2); empty when unknown */
  attributes: string[];
  /** the scrape query and Amazon category path; null when unknown */
  query: string | null;
  productCategory: string | null;
  category: string | null;
  rating: string;
}

export type Split = 'train' | 'dev' | 'test';

/** One goal: the instruction and what the reward compares the purchase with. */
export interface Goal {
  /** session name: `fixed_<index>` */
  id: string;
  /** WebShop's canonical goal index (test 0–499, dev 500–1499, train 1500+ upstream) */
  index: number;
  split: Split;
  /** the full instruction shown, including `, and price lower than X.00 dollars` */
  instruction: string;
  asin: string;
  /** target title (the type reward's `name`) */
  name: string;
  query: string | null;
  productCategory: string | null;
  attributes: string[];
  /** option name → value */
  goalOptions: Record<string, string>;
  priceUpper: number;
}

/** The loaded env: read-only after load; workers may share it. */
export interface WebshopEnv {
  source: string;
  products: readonly Product[];
  byAsin: ReadonlyMap<string, Product>;
  goals: readonly Goal[];
  goalsById: ReadonlyMap<string, Goal>;
  index: SearchIndex;
}
