/**
 * Batched, pure stepping for worker pools (piscina): workers hold read-only games by id, the
 * state travels with each request, so any worker can serve any episode.
 *
 *   // worker file: export default stepMany;  (games load lazily on first use)
 */
import { loadGames, type LoadOpts } from './data.ts';
import { reset, step, admissible, type AlfState, type ResetOpts, type StepResult, type ResetResult } from './engine.ts';
import { expert } from './expert.ts';

export type PoolRequest =
  | { op: 'step'; game: string; state: AlfState; action: string }
  | { op: 'reset'; game: string; opts?: ResetOpts }
  | { op: 'admissible'; game: string; state: AlfState }
  | { op: 'expert'; game: string; state: AlfState };
export type PoolResponse =
  | { ok: true; op: 'step'; result: StepResult }
  | { ok: true; op: 'reset'; result: ResetResult }
  | { ok: true; op: 'admissible'; result: string[] }
  | { ok: true; op: 'expert'; result: string | null }
  | { ok: false; error: { code: string; message: string } };

/** Serve a batch of requests; errors come back as data, per request. */
export function stepMany(requests: readonly PoolRequest[], data: LoadOpts = {}): PoolResponse[] {
  const set = loadGames(data);
  return requests.map((r): PoolResponse => {
    try {
      const g = set.get(r.game);
      switch (r.op) {
        case 'step':
          return { ok: true, op: 'step', result: step(g, r.state, r.action) };
        case 'reset':
          return { ok: true, op: 'reset', result: reset(g, r.opts ?? {}) };
        case 'admissible':
          return { ok: true, op: 'admissible', result: admissible(g, r.state) };
        case 'expert':
          return { ok: true, op: 'expert', result: expert(g, r.state) };
      }
    } catch (e) {
      const err = e as { code?: string; message?: string };
      return { ok: false, error: { code: err.code ?? 'ALFWORLD_ERROR', message: err.message ?? String(e) } };
    }
  });
}

/** piscina entry: `{requests, data?}` → responses */
export default function poolTask(msg: { requests: PoolRequest[]; data?: LoadOpts }): PoolResponse[] {
  return stepMany(msg.requests, msg.data ?? {});
}
