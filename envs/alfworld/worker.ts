/**
 * Worker-thread entry for cluster/pool.ts (`new WorkerPool({module: <this file>})`): each thread
 * loads the games once, read-only; requests carry the episode state, so any thread serves any step.
 */
import { loadGames } from './data.ts';
import { step, type AlfState } from './engine.ts';
import { expert } from './expert.ts';
import { stepMany, type PoolRequest, type PoolResponse } from './pool.ts';

export const tasks = {
  /** One reset/step/admissible/expert request. */
  request: (r: PoolRequest): PoolResponse => stepMany([r])[0]!,
  /** The expert's next action applied to the state, in one trip (for throughput benchmarks and sim targets). */
  expertStep: (r: { game: string; state: AlfState }) => {
    const g = loadGames().get(r.game);
    const a = expert(g, r.state) ?? 'look';
    return step(g, r.state, a);
  },
};

export function setup(): void {
  loadGames();
}
