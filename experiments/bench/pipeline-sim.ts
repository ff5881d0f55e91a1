/**
 * A discrete-event simulation of `hr1 train`'s GRPO iterations at a scale this machine cannot
 * run: W rerun workers (one target replica each, one episode at a time), one learner, one
 * sampler, driven by stage times measured here (`hr1 bench train`). Synchronous against pipelined
 * with staleness N, the schedule of experiments/train-pipeline.ts:
 *
 * - R(t): the B + H policy-free base episodes, on the workers; admitted when U(t−1) is in
 *   (synchronous) or U(t−2−N) (pipelined);
 * - S(t): sampling K patches on the sampler, once R(t) is in and version t−1−N exists;
 * - V(t): K × H rerun episodes on the workers;
 * - U(t): the learner's update, after V(t) and U(t−1).
 *
 * Workers take episodes first-come first-served, older iterations first. Episode times are drawn
 * from a lognormal with the measured mean and a stated spread; the sampler's and learner's times
 * are the measured ones, divided by a factor for a GPU. Seeded: the same inputs give the same figures.
 */
import { Rng } from '../../cluster/rng.ts';

export interface SimInput {
  /** ms of one episode on one worker (mean) */
  episodeMs: number;
  /** coefficient of variation of episode times (lognormal). @default 0.5 */
  episodeCv?: number;
  /** base episodes per iteration (batch + held-out) */
  baseEpisodes: number;
  /** rerun episodes per iteration (K × held-out tasks) */
  rerunEpisodes: number;
  samplingMs: number;
  updateMs: number;
  workers: number;
  iterations: number;
  /** null: synchronous */
  staleness: number | null;
  seed?: number;
}

export interface SimResult {
  wallMs: number;
  msPerIteration: number;
  /** share of worker-time spent running episodes */
  workerUtilisation: number;
  learnerIdle: number;
}

/** A tiny binary heap of (time, seq) events. */
class Events {
  private h: { t: number; seq: number; f: () => void }[] = [];
  private seq = 0;
  push(t: number, f: () => void): void {
    const h = this.h;
    h.push({ t, seq: this.seq++, f });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.less(h[i]!, h[p]!)) {
        [h[i], h[p]] = [h[p]!, h[i]!];
        i = p;
      } else break;
    }
  }
  pop(): { t: number; f: () => void } | undefined {
    const h = this.h;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
  private less(a: { t: number; seq: number }, b: { t: number; seq: number }): boolean {
    return a.t < b.t || (a.t === b.t && a.seq < b.seq);
  }
}

export function simulate(o: SimInput): SimResult {
  const rng = new Rng(`pipeline-sim|${o.seed ?? 0}`);
  const cv = o.episodeCv ?? 0.5;
  const sigma = Math.sqrt(Math.log(1 + cv * cv));
  const mu = Math.log(o.episodeMs) - (sigma * sigma) / 2;
  const episode = () => {
    // Box–Muller from the seeded generator
    const u = Math.max(1e-12, rng.next());
    const v = rng.next();
    return Math.exp(mu + sigma * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v));
  };
  const ev = new Events();
  let now = 0;
  // workers: a queue of episode jobs, ordered by iteration, then arrival
  const queue: { it: number; seq: number; done: () => void }[] = [];
  let seq = 0;
  let free = o.workers;
  let busyWorkerMs = 0;
  const dispatch = () => {
    while (free > 0 && queue.length > 0) {
      queue.sort((a, b) => a.it - b.it || a.seq - b.seq);
      const j = queue.shift()!;
      free--;
      const d = episode();
      busyWorkerMs += d;
      ev.push(now + d, () => {
        free++;
        j.done();
        dispatch();
      });
    }
  };
  const runEpisodes = (it: number, n: number, then: () => void) => {
    let left = n;
    for (let i = 0; i < n; i++)
      queue.push({
        it,
        seq: seq++,
        done: () => {
          if (--left === 0) then();
        },
      });
    dispatch();
  };
  // one server each for the sampler and the learner, FIFO
  const server = () => {
    let freeAt = 0;
    let busy = 0;
    return {
      run(ms: number, then: () => void) {
        const start = Math.max(now, freeAt);
        freeAt = start + ms;
        busy += ms;
        ev.push(freeAt, then);
      },
      busy: () => busy,
    };
  };
  const sampler = server();
  const learner = server();
  const N = o.staleness ?? 0;
  const updated = new Set<number>([0]);
  const waiting = new Map<number, (() => void)[]>();
  const whenUpdated = (v: number, f: () => void) => {
    if (v <= 0 || updated.has(v)) f();
    else waiting.set(v, [...(waiting.get(v) ?? []), f]);
  };
  const markUpdated = (t: number) => {
    updated.add(t);
    for (const f of waiting.get(t) ?? []) f();
    waiting.delete(t);
  };
  // the sampler takes iterations in order
  let nextSample = 1;
  const readyToSample = new Set<number>();
  const trySample = () => {
    const t = nextSample;
    if (t > o.iterations || !readyToSample.has(t)) return;
    readyToSample.delete(t);
    nextSample++;
    whenUpdated(Math.max(0, t - 1 - N), () =>
      sampler.run(o.samplingMs, () => {
        runEpisodes(t, o.rerunEpisodes, () => whenUpdated(t - 1, () => learner.run(o.updateMs, () => markUpdated(t))));
        trySample();
      }),
    );
  };
  const admit = (t: number) => {
    if (t > o.iterations) return;
    runEpisodes(t, o.baseEpisodes, () => {
      readyToSample.add(t);
      trySample();
    });
  };
  // admission: synchronous, t after U(t−1); pipelined, t after U(t−2−N)
  const lag = o.staleness === null ? 1 : 2 + N;
  for (let t = 1; t <= Math.min(o.iterations, lag); t++) admit(t);
  for (let t = lag + 1; t <= o.iterations; t++) whenUpdated(t - lag, () => admit(t));
  for (let e = ev.pop(); e; e = ev.pop()) {
    now = e.t;
    e.f();
  }
  return { wallMs: now, msPerIteration: now / o.iterations, workerUtilisation: busyWorkerMs / (now * o.workers), learnerIdle: 1 - learner.busy() / now };
}

export interface Projection {
  workers: number;
  learner: 'cpu' | 'gpu';
  sync_s_per_iter: number;
  pipelined_s_per_iter: number;
  speedup: number;
  worker_utilisation_sync: number;
  worker_utilisation_pipelined: number;
}

/**
 * Speedups for 8, 64 and 512 workers from measured per-iteration stage times (a synchronous run
 * on this machine: R ms, S ms, V ms, U ms; `cores` worked on the episodes at once).
 */
export function project(m: { rolloutMs: number; samplingMs: number; validationMs: number; updateMs: number; cores: number; baseEpisodes: number; rerunEpisodes: number }, o: { staleness: number; gpuFactor: number; workers?: number[]; iterations?: number; episodeCv?: number }): Projection[] {
  // the reruns kept `cores` busy: one episode's work on one worker
  const episodeMs = (m.validationMs * m.cores) / m.rerunEpisodes;
  const out: Projection[] = [];
  for (const learner of ['cpu', 'gpu'] as const) {
    const f = learner === 'gpu' ? o.gpuFactor : 1;
    for (const w of o.workers ?? [8, 64, 512]) {
      const base = { episodeMs, baseEpisodes: m.baseEpisodes, rerunEpisodes: m.rerunEpisodes, samplingMs: m.samplingMs / f, updateMs: m.updateMs / f, workers: w, iterations: o.iterations ?? 32, ...(o.episodeCv !== undefined ? { episodeCv: o.episodeCv } : {}) };
      const s = simulate({ ...base, staleness: null });
      const p = simulate({ ...base, staleness: o.staleness });
      out.push({ workers: w, learner, sync_s_per_iter: s.msPerIteration / 1000, pipelined_s_per_iter: p.msPerIteration / 1000, speedup: s.msPerIteration / p.msPerIteration, worker_utilisation_sync: s.workerUtilisation, worker_utilisation_pipelined: p.workerUtilisation });
    }
  }
  return out;
}
