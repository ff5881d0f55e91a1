/**
 * The word list of the learned targets' tokenizer, harvested deterministically from the shipped
 * data: the instructions, observations and actions of expert episodes on every task of the env,
 * plus the hint phrasings. Words are ordered by count (desc), then alphabetically; WebShop's
 * long tail is cut at `maxWords`. The list is stored with each model, so a model keeps its
 * vocabulary even if the data changes.
 */
import { loadGames } from '../../../envs/alfworld/index.ts';
import { loadWebshop } from '../../../envs/webshop/index.ts';
import { ALFWORLD_INSTRUCTIONS } from '../../../envs/alfworld/index.ts';
import { WEBSHOP_INSTRUCTIONS } from '../../../envs/webshop/index.ts';
import { collectDecisions, type LmEnv } from './bc.ts';
import { SKILL_BANK, TEMPLATE_BANK, WARNING_BANK } from './hints.ts';
import { dbbenchHarvest } from './dbbench/words.ts';

/** @default 4000 */
export const DEFAULT_MAX_WORDS = 4000;

// the promise, so builds started together (hr1 zoo build --jobs 2) share one harvest: ALFWorld's
// plays all 340 games twice (~11 s)
const memo = new Map<string, Promise<string[]>>();

function count(counts: Map<string, number>, text: string, w = 1): void {
  for (const m of text.toLowerCase().matchAll(/[a-z]+/g)) counts.set(m[0], (counts.get(m[0]) ?? 0) + w);
}

/** The word list for a set of envs (memoised per process). */
export function harvestWords(envs: readonly LmEnv[], maxWords = DEFAULT_MAX_WORDS): Promise<string[]> {
  const key = `${[...envs].sort().join(',')}|${maxWords}`;
  let words = memo.get(key);
  if (!words) {
    memo.set(key, (words = harvest(envs, maxWords)));
    // a failed harvest is not kept: the next call tries again
    words.catch(() => memo.delete(key));
  }
  return words;
}

async function harvest(envs: readonly LmEnv[], maxWords: number): Promise<string[]> {
  const counts = new Map<string, number>();
  // hint phrasings always count, so every harness text is in words
  for (const t of [...SKILL_BANK, ...WARNING_BANK, ...TEMPLATE_BANK, ALFWORLD_INSTRUCTIONS, WEBSHOP_INSTRUCTIONS, 'Hint: Skills: Tool hint:']) count(counts, t, 1000);
  for (const env of [...envs].sort()) {
    if (env === 'alfworld') {
      const ids = loadGames().games.map((g) => g.id);
      for (const d of await collectDecisions({ env, episodes: ids.length, seed: 0, noise: 0.1, tasks: ids })) {
        count(counts, d.action);
        for (const a of d.admissible) count(counts, a);
      }
      // last observations of each decision's context are enough: earlier ones repeat
      for (const d of await collectDecisions({ env, episodes: ids.length, seed: 1, noise: 0.3, tasks: ids })) count(counts, d.messages[d.messages.length - 1]!.content);
    } else if (env === 'dbbench') {
      // the protocol prompt, SQL words and error texts, the training tables' words, synthetic questions
      for (const [t, w] of await dbbenchHarvest()) count(counts, t, w);
    } else {
      const ws = loadWebshop();
      for (const g of ws.goals) count(counts, g.instruction, 5);
      for (const p of ws.products) count(counts, `${p.title} ${Object.values(p.options).flat().join(' ')}`);
    }
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([w]) => w).slice(0, maxWords);
}
