/**
 * Worker-thread entry for cluster/pool.ts: each thread loads the catalog, goals and search index
 * once (read-only); requests carry the episode state, so any thread serves any step.
 */
import { loadWebshop } from './data.ts';
import { step, type WebshopState } from './engine.ts';
import { expert } from './expert.ts';
import { stepMany, type PoolRequest, type PoolResponse } from './pool.ts';

export const tasks = {
  request: (r: PoolRequest): PoolResponse => stepMany([r])[0]!,
  /** the expert's next action applied to the state, in one trip (throughput benchmarks) */
  expertStep: (r: { state: WebshopState }) => {
    const env = loadWebshop();
    return step(env, r.state, expert(env, r.state) ?? 'click[back to search]');
  },
};

export function setup(): void {
  loadWebshop();
}
