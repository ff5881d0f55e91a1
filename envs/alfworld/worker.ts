/**
 * Worker-thread entry for cluster/pool.ts (`new WorkerPool({module: <this file>})`): each thread
 * loads the games once, read-only; requests carry the episode state, so any thread serves any step.
 */
import { loadGames } from './data.ts';
import { admissible, reset, step, type AlfState, type ProtocolName } from './engine.ts';
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
  /** A reset with the admissible commands and the oracle's first action (harness sessions need both). */
  resetFull: (r: { game: string; protocol: ProtocolName }) => {
    const g = loadGames().get(r.game);
    const out = reset(g, { protocol: r.protocol });
    return { state: out.state, observation: out.observation, info: out.info, admissible: admissible(g, out.state), expert: expert(g, out.state) };
  },
  /** A step with the admissible commands and the oracle's next action, in one trip. */
  stepFull: (r: { game: string; state: AlfState; action: string }) => {
    const g = loadGames().get(r.game);
    const res = step(g, r.state, r.action);
    return { result: res, admissible: res.done ? null : admissible(g, res.state), expert: res.done ? null : expert(g, res.state) };
  },
};

export function setup(): void {
  loadGames();
}
