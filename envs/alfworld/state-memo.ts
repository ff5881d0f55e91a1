/**
 * Per-game memo of pure functions of a state's grammar and facts (admissible commands, the
 * oracle's next action). The episodes of one (task, seed) under other harnesses — vanilla, each
 * patch, each rerun — pass through the same states, and these enumerations are most of a step's
 * cost. Keyed within one Game object (loadGames caches them per process); the least recently
 * used states go first, so memory stays bounded.
 */
import type { Game } from './game.ts';

export class StateMemo<T> {
  private readonly byGame = new WeakMap<Game, Map<string, T>>();
  constructor(private readonly max = 2048) {}

  /** `compute()` once per (game, key) while the key stays among the `max` most recently used */
  get(g: Game, key: string, compute: () => T): T {
    let m = this.byGame.get(g);
    if (!m) this.byGame.set(g, (m = new Map()));
    if (m.has(key)) {
      const hit = m.get(key) as T;
      m.delete(key);
      m.set(key, hit);
      return hit;
    }
    const v = compute();
    if (m.size >= this.max) m.delete(m.keys().next().value!);
    m.set(key, v);
    return v;
  }
}

/** the key of a state for functions of its grammar and facts only */
export const factsKey = (grammar: string, facts: readonly number[]): string => `${grammar}|${facts.join(',')}`;
