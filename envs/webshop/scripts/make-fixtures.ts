/**
 * Builds test/unit/webshop/fixtures/react-pages.json from ReAct's episodes: the pages ReAct saw,
 * re-rendered in WebShop's text mode where the difference is known and mechanical:
 *   - ReAct prints each text on its own line and wraps clickables in [..]; text mode joins with ` [SEP] `;
 *   - ReAct drops the first two texts ("Instruction:", the instruction) on every page but the first;
 *   - ReAct keeps only the first 3 products of a results page;
 *   - ReAct prints an option group as `name [v1][v2]`; text mode lists name, v1, v2;
 *   - ReAct's server titled the search page "Webshop"; WebShop's template says "WebShop".
 *
 *   node --import=tsx envs/webshop/scripts/make-fixtures.ts <dir>
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseReactItem, parseReactResults, type Episode } from '../derive.ts';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: make-fixtures.ts <dir with react_webshop_500_episodes.jsonl>');
  process.exit(2);
}
const out = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test', 'unit', 'webshop', 'fixtures');
const eps = readFileSync(join(dir, 'react_webshop_500_episodes.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l) as Episode);
const SEP = ' [SEP] ';
const searches: { session: string; query: string; shown: string[]; expectedPrefix?: string }[] = [];
const items: { session: string; asin: string; react: string; expected: string }[] = [];
const searchPages: { session: string; react: string; expected: string }[] = [];
const seenItems = new Set<string>();
for (const e of eps) {
  const instr = ['Instruction:', e.instruction_text];
  for (const { action, observation } of e.steps) {
    if (action === 'reset' && searchPages.length < 20) {
      const ls = observation.split('\n').map((l) => l.trim()).filter(Boolean);
      if (ls[0] === 'Webshop' && ls[1] === 'Instruction:' && ls[3] === '[Search]')
        searchPages.push({ session: e.session, react: observation, expected: ['WebShop', 'Instruction:', ls[2]!, 'Search'].join(SEP) });
    }
    const q = /^search\[(.*)\]$/.exec(action)?.[1];
    const res = q !== undefined ? parseReactResults(observation) : null;
    if (q !== undefined && res && res.products.length > 0) {
      const t = [...instr, 'Back to Search', `Page ${res.page} (Total results: ${res.total})`];
      if (res.page > 1) t.push('< Prev');
      if (res.page * 10 < res.total) t.push('Next >');
      for (const p of res.products) t.push(p.asin, p.title, p.priceTag);
      // the rendered prefix for the first 150 searches (size); the ASINs for all
      const shown = res.products.map((p) => p.asin);
      searches.push(searches.length < 150 ? { session: e.session, query: q, shown, expectedPrefix: t.join(SEP) } : { session: e.session, query: q, shown });
    }
    const c = /^click\[([A-Z0-9]{10})\]$/.exec(action)?.[1];
    const item = c ? parseReactItem(observation) : null;
    if (c && item && !seenItems.has(c) && items.length < 60) {
      seenItems.add(c);
      const t = [...instr, 'Back to Search', '< Prev'];
      for (const [name, values] of Object.entries(item.options)) t.push(name, ...values);
      t.push(item.title, `Price: ${item.priceTag}`, 'Rating: N.A.', 'Description', 'Features', 'Reviews', 'Buy Now');
      items.push({ session: e.session, asin: c, react: observation, expected: t.join(SEP) });
    }
  }
}
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'react-pages.json'), JSON.stringify({ source: 'ysymyth/ReAct WebShop.ipynb @ 6bdb3a1 (MIT), via envs/webshop/scripts/make-fixtures.ts', searchPages, items, searches }) + '\n');
console.log({ searchPages: searchPages.length, items: items.length, searches: searches.length });
