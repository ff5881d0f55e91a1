/**
 * Rebuilds envs/webshop/data/{products,goals}.json from a directory laid out like the shared data
 * (react_webshop_500_episodes.jsonl, human_goals.json). Deterministic: same input, same bytes.
 *
 *   node --import=tsx envs/webshop/scripts/build-data.ts <dir> [outDir]
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deriveFromEpisodes, type Episode } from '../derive.ts';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: build-data.ts <dir with react_webshop_500_episodes.jsonl and human_goals.json> [outDir]');
  process.exit(2);
}
const out = process.argv[3] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'data');
const epFile = join(dir, 'react_webshop_500_episodes.jsonl');
const hgFile = join(dir, 'human_goals.json');
for (const f of [epFile, hgFile]) if (!existsSync(f)) throw new Error(`missing ${f}`);
const episodes = readFileSync(epFile, 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l) as Episode);
const human = JSON.parse(readFileSync(hgFile, 'utf8')) as string[];
const d = deriveFromEpisodes(episodes, human);
writeFileSync(join(out, 'products.json'), JSON.stringify({ format: 'hr1-webshop-products/1', products: d.products }) + '\n');
writeFileSync(join(out, 'goals.json'), JSON.stringify({ format: 'hr1-webshop-goals/1', goals: d.goals }, null, 0) + '\n');
console.log(JSON.stringify(d.stats, null, 2));
