/**
 * The schedule of `hr1 train`'s GRPO iterations, synchronous or pipelined (`--pipeline`).
 *
 * Per iteration t four stages: R, the base rollouts and the failure packet (no policy: they depend
 * only on the seed and t); S, K samples from a policy version; V, the K reruns of the sampled
 * patches; U, one learner update, which makes version t (v0 is the engineer as SFT left it).
 *
 * Synchronous: R S V U of t, then those of t+1; S(t) samples from v(t−1).
 *
 * Pipelined with maximum staleness N: S(t) samples from v(max(0, t−1−N)) — exactly that version,
 * whatever the timing, so a run's updates do not depend on the machine's load — and waits only
 * for it; R(t) starts once U(t−2−N) is in (admission control: a sample that would be too stale is
 * never generated, rather than generated and thrown away). Updates apply in order. So with N ≥ 1
 * the reruns of t overlap those of t−1 and the update of t−1; with N = 0 only the policy-free
 * rollouts of t+1 overlap the reruns and update of t, and the updates are those of the synchronous
 * loop (tested). Each sample keeps the log-probs of the version that drew it; the learner's clipped
 * ratio π_θ / π_old corrects for the staleness (the decoupled objective of asynchronous PPO).
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Hr1Error } from '../cluster/errors.ts';

export interface PipelineStages<P, S, V> {
  prepare(it: number): Promise<P>;
  /** false when the batch has no failure: no sample, no rerun; U then only logs (version t = version t−1) */
  needsPolicy(p: P): boolean;
  sample(p: P, version: number): Promise<S>;
  score(p: P, s: S): Promise<V>;
  update(p: P, s: S | null, v: V | null): Promise<void>;
  /** no later sample draws from a version below this one */
  release?(below: number): Promise<void> | void;
}

export interface PipelineOptions {
  /** the first and last iteration (a resumed run starts after its checkpoint) */
  from: number;
  to: number;
  maxStaleness: number;
  /** false: the synchronous loop, one stage after another */
  overlap: boolean;
}

/** The policy version iteration t samples from. */
export function samplingVersion(t: number, maxStaleness: number): number {
  return Math.max(0, t - 1 - maxStaleness);
}

export async function runTrainPipeline<P, S, V>(st: PipelineStages<P, S, V>, o: PipelineOptions): Promise<void> {
  const N = o.maxStaleness;
  if (!o.overlap) {
    for (let t = o.from; t <= o.to; t++) {
      const p = await st.prepare(t);
      if (!st.needsPolicy(p)) {
        await st.update(p, null, null);
        continue;
      }
      const v = samplingVersion(t, N);
      const s = await st.sample(p, v);
      await st.release?.(v);
      await st.update(p, s, await st.score(p, s));
    }
    return;
  }
  // U(t) done; versions below `from` are there already (v0, or a resumed run's checkpoint)
  const updated = new Map<number, Promise<void>>();
  const done = (t: number): Promise<void> => (t < o.from ? Promise.resolve() : updated.get(t)!);
  let rejectFailure!: (e: unknown) => void;
  const failure = new Promise<never>((_, rej) => (rejectFailure = rej));
  failure.catch(() => {});
  let failed = false;
  const all: Promise<unknown>[] = [];
  const track = <T>(p: Promise<T>): Promise<T> => {
    p.catch((e: unknown) => {
      failed = true;
      rejectFailure(e);
    });
    all.push(p);
    return p;
  };
  // S runs in iteration order on the one sampler (it loads the versions in increasing order)
  let samplerTail: Promise<unknown> = Promise.resolve();
  for (let t = o.from; t <= o.to; t++) {
    // admission: iteration t starts once update t−2−N is in (its sample waits for t−1−N)
    await Promise.race([done(t - 2 - N), failure]);
    if (failed) break;
    const p = track(st.prepare(t));
    const v = samplingVersion(t, N);
    const s = track(
      samplerTail.then(async () => {
        const P = await p;
        if (!st.needsPolicy(P)) return null;
        await done(v);
        const r = await st.sample(P, v);
        await st.release?.(v);
        return r;
      }),
    );
    samplerTail = s.catch(() => {});
    const sc = track(
      (async () => {
        const P = await p;
        const S = await s;
        return S === null ? null : st.score(P, S);
      })(),
    );
    const prev = done(t - 1);
    updated.set(
      t,
      track(
        (async () => {
          const P = await p;
          const S = await s;
          const V = await sc;
          await prev;
          await st.update(P, S, V);
        })(),
      ),
    );
  }
  // the first failure stops the run at once (work in flight is left to settle on its own)
  await Promise.race([Promise.all(all), failure]);
}

/**
 * Which stages were busy when: per stage, the wall time during which at least one of its
 * operations was in flight. idle share = 1 − busy share.
 */
export class StageClock {
  private readonly active = new Map<string, number>();
  private readonly since = new Map<string, number>();
  private readonly busy = new Map<string, number>();
  private t0 = performance.now();

  start(): void {
    this.t0 = performance.now();
  }

  async time<T>(stage: string, f: () => Promise<T>): Promise<T> {
    this.enter(stage);
    try {
      return await f();
    } finally {
      this.exit(stage);
    }
  }

  private enter(stage: string): void {
    const n = this.active.get(stage) ?? 0;
    if (n === 0) this.since.set(stage, performance.now());
    this.active.set(stage, n + 1);
  }

  private exit(stage: string): void {
    const n = (this.active.get(stage) ?? 1) - 1;
    this.active.set(stage, n);
    if (n === 0) this.busy.set(stage, (this.busy.get(stage) ?? 0) + performance.now() - this.since.get(stage)!);
  }

  report(wallMs = performance.now() - this.t0): { wallMs: number; busyMs: Record<string, number>; busyShare: Record<string, number>; idleShare: Record<string, number> } {
    const busyMs = Object.fromEntries(['rollout', 'sampling', 'validation', 'update'].map((k) => [k, Math.round(this.busy.get(k) ?? 0)]));
    const share = (ms: number) => (wallMs > 0 ? Math.min(1, ms / wallMs) : 0);
    return {
      wallMs: Math.round(wallMs),
      busyMs,
      busyShare: Object.fromEntries(Object.entries(busyMs).map(([k, v]) => [k, share(v)])),
      idleShare: Object.fromEntries(Object.entries(busyMs).map(([k, v]) => [k, 1 - share(v)])),
    };
  }
}

/** The policy versions in the object store by iteration; an old one leaves the store when nothing will sample it. */
export class PolicyVersions {
  private readonly names = new Map<number, string>();
  constructor(
    private readonly store: { delete(name: string): Promise<boolean> },
    private readonly prefix: string,
    private readonly ext: string,
  ) {}

  objectName(v: number): string {
    return `${this.prefix}/v${v}.${this.ext}`;
  }

  set(v: number, name: string): void {
    this.names.set(v, name);
  }

  /** version v has the weights of version `from` (an iteration without an update) */
  alias(v: number, from: number): void {
    this.names.set(v, this.get(from));
  }

  get(v: number): string {
    const n = this.names.get(v);
    if (n === undefined) throw new Hr1Error('TRAIN_NO_POLICY', `policy version ${v} is not in the object store (have ${[...this.names.keys()].sort((a, b) => a - b).join(', ') || 'none'}); this is a bug in the GRPO schedule`);
    return n;
  }

  async release(below: number, keep: number): Promise<void> {
    for (const v of [...this.names.keys()]) {
      if (v >= below || v === keep) continue;
      const name = this.names.get(v)!;
      this.names.delete(v);
      if (![...this.names.values()].includes(name)) await this.store.delete(name).catch(() => false);
    }
  }
}

/** The file of policy version v beside a pipelined run's checkpoints. */
export function policyFile(v: number, ext: string): string {
  return `policy-v${v}.${ext}`;
}

/** Remove policy files below version `below` (no resume needs them any more). */
export function pruneFiles(dir: string, below: number, ext: string): void {
  if (!existsSync(dir)) return;
  for (const f of readdirSync(dir)) {
    const m = /^policy-v(\d+)\./.exec(f);
    if (m && Number(m[1]) < below && f.endsWith(`.${ext}`)) rmSync(join(dir, f), { force: true });
  }
}

export function range(a: number, b: number): number[] {
  return Array.from({ length: Math.max(0, b - a) }, (_, i) => a + i);
}
