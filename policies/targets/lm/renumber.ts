/**
 * Renumbered ALFWorld episodes for behaviour cloning, so a model copies instance numbers from
 * what it reads instead of memorising them.
 *
 * The 200 training games are few enough that a small model learns "the apple of this room is
 * apple 1 on countertop 2" and writes `take box 3 from sidetable 1` where the observation said
 * box 1. A renumbering gives each kind's instances in a game new numbers (`drawer 1, 2, 3` →
 * `drawer 2, 4, 5`), increasing, so the explorer's search order, which breaks ties by number,
 * still reads the same; the recorded texts of an episode (observations, admissible actions,
 * actions, labels) are rewritten with one map, so every decision is as consistent as the
 * original. The game itself is played with its own names. Deterministic for the Rng passed in.
 */
import type { Rng } from '../../../cluster/rng.ts';
import type { Game } from '../../../envs/alfworld/index.ts';

/** numbers a renumbered kind draws from: 1 … (instances + SPARE) */
export const RENUMBER_SPARE = 4;

/** A text rewriter for one episode of `game`: each `kind N` of the game to its new number. */
export function renumbering(game: Game, rng: Rng): (text: string) => string {
  const byKind = new Map<string, number[]>();
  for (const name of game.names) {
    const m = /^(.+?) (\d+)$/.exec(name);
    if (!m) continue;
    const list = byKind.get(m[1]!) ?? [];
    if (!list.includes(Number(m[2]))) list.push(Number(m[2]));
    byKind.set(m[1]!, list);
  }
  const map = new Map<string, string>();
  for (const [kind, nums] of [...byKind.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    nums.sort((a, b) => a - b);
    // an increasing draw of as many numbers from 1 … n + SPARE
    const pool = Array.from({ length: nums.length + RENUMBER_SPARE }, (_, i) => i + 1);
    const picked = rng.shuffle(pool).slice(0, nums.length).sort((a, b) => a - b);
    nums.forEach((n, i) => map.set(`${kind} ${n}`, `${kind} ${picked[i]}`));
  }
  if (map.size === 0) return (t) => t;
  const kinds = [...byKind.keys()].sort((a, b) => b.length - a.length).map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const re = new RegExp(`\\b(${kinds.join('|')}) (\\d+)\\b`, 'g');
  return (text) => text.replace(re, (whole: string, kind: string, n: string) => map.get(`${kind} ${n}`) ?? whole);
}
