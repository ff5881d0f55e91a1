/**
 * Batched, pure stepping for worker pools (piscina): each worker loads the catalog, goals and
 * search index once (read-only); the state travels with every request, so any worker can serve
 * any episode.
 *
 *   // worker file: export { default } from './envs/webshop/pool.ts';
 */
import { loadWebshop, type LoadOpts } from './data.ts';
import { reset, step, available, type Available, type ResetOpts, type ResetResult, type StepResult, type WebshopState } from './engine.ts';
import { expert } from './expert.ts';

export type PoolRequest =
  | { op: 'reset'; goal: string | number | null; opts?: ResetOpts }
  | { op: 'step'; state: WebshopState; action: string }
  | { op: 'available'; state: WebshopState }
  | { op: 'expert'; state: WebshopState };
export type PoolResponse =
  | { ok: true; op: 'reset'; result: ResetResult }
  | { ok: true; op: 'step'; result: StepResult }
  | { ok: true; op: 'available'; result: Available }
  | { ok: true; op: 'expert'; result: string | null }
  | { ok: false; error: { code: string; message: string } };

/** Serve a batch of requests; errors come back as tagged data, per request. */
export function stepMany(requests: readonly PoolRequest[], data: LoadOpts = {}): PoolResponse[] {
  const env = loadWebshop(data);
  return requests.map((r): PoolResponse => {
    try {
      switch (r.op) {
        case 'reset':
          return { ok: true, op: 'reset', result: reset(env, r.goal, r.opts ?? {}) };
        case 'step':
          return { ok: true, op: 'step', result: step(env, r.state, r.action) };
        case 'available':
          return { ok: true, op: 'available', result: available(env, r.state) };
        case 'expert':
          return { ok: true, op: 'expert', result: expert(env, r.state) };
      }
    } catch (e) {
      const err = e as { code?: string; message?: string };
      return { ok: false, error: { code: err.code ?? 'WEBSHOP_ERROR', message: err.message ?? String(e) } };
    }
  });
}

/** piscina entry: `{requests, data?}` → responses */
export default function poolTask(msg: { requests: PoolRequest[]; data?: LoadOpts }): PoolResponse[] {
  return stepMany(msg.requests, msg.data ?? {});
}
