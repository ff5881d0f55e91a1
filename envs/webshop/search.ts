/**
 * Search as WebShop's engine: BM25 (Pyserini's defaults k1 = 0.9, b = 0.4) over one field, the
 * lowercased `Title + Description + BulletPoints[0] + option text` of each product
 * (search_engine/convert_product_file_format.py), top 50. wink-bm25-text-search does the BM25;
 * tokens follow Lucene's English analyzer (possessive strip, its 33 stopwords, Porter stemming,
 * here Porter2 from wink-nlp-utils). Ties rank by catalog order, as Lucene ranks by doc id.
 */
import bm25 from 'wink-bm25-text-search';
// the stemmer alone: the package's index also loads wink-nlp and its English model (a quarter
// second at every start of a process that imports the env), for a sentence splitter we never use
import porter2Stem from 'wink-nlp-utils/src/string-stem.js';
import type { Product } from './types.ts';
import { WebshopBadDataError } from './errors.ts';

/** engine.py SEARCH_RETURN_N */
export const SEARCH_RETURN_N = 50;
/** Pyserini's LuceneSearcher BM25 defaults */
export const BM25_PARAMS = { k1: 0.9, b: 0.4 } as const;

// Lucene EnglishAnalyzer.ENGLISH_STOP_WORDS_SET
const STOP = new Set(
  'a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with'.split(' '),
);

const stemCache = new Map<string, string>();
function stem(t: string): string {
  let s = stemCache.get(t);
  if (s === undefined) {
    s = /^[a-z]+$/.test(t) ? porter2Stem(t) : t;
    stemCache.set(t, s);
  }
  return s;
}

/** The analyzer, index and query side alike. */
export function analyze(text: string): string[] {
  const out: string[] = [];
  for (let t of text.toLowerCase().match(/[a-z0-9]+(?:['’.][a-z0-9]+)*/g) ?? []) {
    t = t.replace(/['’]s$/, '');
    if (STOP.has(t)) continue;
    out.push(stem(t));
  }
  return out;
}

/** The text WebShop indexes for a product. */
export function indexedText(p: Product): string {
  const optionText = Object.entries(p.options)
    .map(([name, values]) => `${name}: ${values.join(', ')}`)
    .join(', and ');
  return [p.title, p.description, p.bullets[0] ?? '', optionText].join(' ').toLowerCase();
}

export interface SearchIndex {
  /** ASINs of the top `n` (default 50) products for the keywords, best first */
  search(keywords: string, n?: number): string[];
  readonly size: number;
}

export function buildIndex(products: readonly Product[], file = '<catalog>'): SearchIndex {
  if (products.length < 3) throw new WebshopBadDataError(`the catalog has ${products.length} products; search needs at least 3`, file, 'products');
  const engine = bm25();
  engine.defineConfig({ fldWeights: { contents: 1 }, bm25Params: { ...BM25_PARAMS, k: 1 } });
  engine.definePrepTasks([analyze]);
  products.forEach((p, i) => engine.addDoc({ contents: indexedText(p) }, i));
  engine.consolidate(9);
  return {
    size: products.length,
    search(keywords: string, n = SEARCH_RETURN_N): string[] {
      return engine.search(keywords, n).map(([id]) => products[Number(id)]!.asin);
    },
  };
}
