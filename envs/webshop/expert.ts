/**
 * The expert: from any state, the next action of search → open the target → choose the goal's
 * options → Buy Now. Searches first with the instruction (price clause dropped), then, if the
 * target is not among the 50 results, with the target's title.
 */
import { goalOf } from './data.ts';
import { PRODUCT_WINDOW, type WebshopState } from './engine.ts';
import type { Goal, WebshopEnv } from './types.ts';

const clean = (q: string): string => q.replace(/[[\]]/g, ' ').replace(/\s+/g, ' ').trim().toLowerCase();

/** The queries the expert tries, in order. */
export function expertQueries(goal: Goal): string[] {
  return [clean(goal.instruction.replace(/, and price lower than [\d.]+ dollars$/, '')), clean(goal.name)];
}

/** The next oracle action, or null when the episode is over. */
export function expert(env: WebshopEnv, s: WebshopState): string | null {
  if (s.done) return null;
  const g = goalOf(env, s.goal);
  const target = g.asin;
  if ((s.page === 'item' || s.page === 'sub') && s.asin !== target) return 'click[< Prev]';
  if (s.page === 'sub') return 'click[< Prev]';
  if (s.page === 'item') {
    const p = env.byAsin.get(target)!;
    for (const [name, value] of Object.entries(g.goalOptions)) {
      if (s.options[name] === value) continue;
      if (Object.values(p.options).some((vs) => vs.includes(value))) {
        // a value that another group also holds keys to the last such group; click only if that is this one
        let key: string | null = null;
        for (const [k, vs] of Object.entries(p.options)) if (vs.includes(value)) key = k;
        if (key === name) return `click[${value}]`;
      }
    }
    return 'click[Buy Now]';
  }
  const queries = expertQueries(g);
  if (s.page === 'results') {
    const i = s.results.indexOf(target);
    if (i >= 0) {
      const want = Math.floor(i / PRODUCT_WINDOW) + 1;
      if (s.pageNum < want) return 'click[Next >]';
      if (s.pageNum > want) return 'click[< Prev]';
      return `click[${target}]`;
    }
    const k = queries.indexOf(s.keywords ?? '');
    const next = queries[k + 1];
    return next === undefined ? null : `search[${next}]`;
  }
  return `search[${queries[0]}]`;
}
