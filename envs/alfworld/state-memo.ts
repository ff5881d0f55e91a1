/**
 * A memo of pure functions of a game state's grammar and facts (admissible commands, the oracle's
 * next action). The episodes of one (task, seed) under other harnesses — vanilla, each patch,
 * each rerun — pass through the same states, and these enumerations are most of a step's cost.
 * Keyed by the Game object (loadGames caches them per process; two objects never share entries,
 * whatever their ids) and the state; one bound over all games, least recently used first, so a
 * run over thousands of games keeps at most `max` entries (per process or worker thread: 4,096
 * admissible lists, about 10 MB; 8,192 oracle actions).
 */
import type { Game } from './game.ts';

const serials = new WeakMap<Game, number>();
let nextSerial = 0;
const serialOf = (g: Game): number => {
  let s = serials.get(g);
  if (s === undefined) serials.set(g, (s = nextSerial++));
  return s;
};

export class StateMemo<T> {
  private readonly m = new Map<string, T>();
  constructor(private readonly max = 2048) {}

  /** `compute()` once per (game, key) while the pair stays among the `max` most recently used */
  get(g: Game, key: string, compute: () => T): T {
    const k = `${serialOf(g)}#${key}`;
    if (this.m.has(k)) {
      const hit = this.m.get(k) as T;
      this.m.delete(k);
      this.m.set(k, hit);
      return hit;
    }
    const v = compute();
    if (this.m.size >= this.max) this.m.delete(this.m.keys().next().value!);
    this.m.set(k, v);
    return v;
  }

  get size(): number {
    return this.m.size;
  }
}

/** the key of a state for functions of its grammar and facts only */
export const factsKey = (grammar: string, facts: readonly number[]): string => `${grammar}|${facts.join(',')}`;
