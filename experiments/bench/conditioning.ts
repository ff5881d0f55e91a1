/**
 * `hr1 bench conditioning`: does the engineer read the packet? On held-out batches of one env, the
 * engineer's patch for each batch's own packet is scored against (a) the patch it writes for
 * another packet of the same env (the next batch's: the counterfactual) and (b) the patch it
 * writes for the empty packet (no failed episode shown), all on the same batch with paired seeds.
 * conditioning_gain = success(own) − success(other), per episode, with a seeded bootstrap 95 %
 * interval that resamples batches, then episodes within them. An engineer that ignores its input
 * writes the same patch for every packet: its gain is exactly 0 (same_patch_rate 1).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster } from '../../cluster/client.ts';
import { ConfigError } from '../../cluster/errors.ts';
import { EpisodeCache, makeBatches, rewardOf, rollout } from '../../drivers/index.ts';
import { canonicalJson, patchHash, toPatch } from '../../harness/index.ts';
import type { EpisodeRecord } from '../../harness/types.ts';
import { FINDING_KINDS, extractPacket, loadBuiltinEngineer, teacherForFinding, teacherPropose, type Packet } from '../../policies/engineer/index.ts';
import { hfRunFile, proposeFromHfRun } from '../../policies/engineer/hf/index.ts';
import { envDescriptor } from '../../envs/registry.ts';
import { bootstrapGroups, type Interval } from '../report/bootstrap.ts';
import { countProgress, type ProgressMode } from '../runner/progress.ts';

export interface ConditioningOptions {
  env: string;
  target: string;
  /** `teacher` (the prompted editor), `teacher:KIND` (all the teacher's mechanisms for one finding kind), `fixed:FILE` (one patch for every packet: a packet-blind control), or an engineer: engineer.onnx / engineer-sft.onnx, or a run folder holding engineer.onnx */
  engineer: string;
  /** held-out batches (packets). @default 8 */
  batches?: number;
  /** tasks per batch. @default 10 */
  size?: number;
  /** @default the env's held-out split */
  split?: string;
  /** batch seed. @default 0 */
  seed?: number;
  /** folder of the episode cache. @default .hr1/conditioning */
  out?: string;
  log?: (line: string) => void;
  /** batch rollouts done on stderr (vanilla, then own, other and empty packet's patch per batch): a bar on a TTY, periodic lines otherwise. @default 'silent' */
  progress?: ProgressMode;
}

export interface ConditioningResult {
  env: string;
  target: string;
  engineer: string;
  split: string;
  batches: number;
  episodes: number;
  /** mean Δ (success − vanilla) of the patch written for the batch's own packet */
  own_delta: number;
  /** … of the patch written for another packet of the env */
  other_delta: number;
  /** … of the patch written for the empty packet */
  empty_delta: number;
  /** own − other, paired per episode, with its 95 % interval */
  conditioning_gain: Interval;
  /** own − empty, paired per episode, with its 95 % interval */
  empty_gain: Interval;
  /** mean per-episode intervention rate (actions the patch forced or rewrote, per step) of the own patches */
  own_intervention_rate: number;
  /** share of batches whose own patch is the other packet's patch (1: the input is ignored) */
  same_patch_rate: number;
  /** valid patches among the own patches */
  valid_rate: number;
  per_batch: { batch: number; own: number; other: number; empty: number; ownHash: string; otherHash: string }[];
}

/** The packet a batch with no failed episode shown would give: counts only. */
export function emptyPacket(p: Packet): Packet {
  const zero = { episodes: 0, count: 0 };
  return {
    ...p,
    batch: { ...p.batch, failed: 0 },
    failedByType: {},
    totals: Object.fromEntries(Object.keys(p.totals).map((k) => [k, zero])) as Packet['totals'],
    episodes: [],
  };
}

type Proposer = (p: Packet) => Promise<unknown>;

function proposer(spec: string, seed: number): Proposer {
  if (spec === 'teacher') return async (p) => teacherPropose(p, { k: 1, seed })[0]?.patch ?? null;
  if (spec.startsWith('teacher:')) {
    // the teacher's mechanisms for one finding kind, all of them (an ablation: which finding's fixes carry the gain)
    const kind = spec.slice(8);
    if (!(FINDING_KINDS as readonly string[]).includes(kind)) throw new ConfigError('--engineer', `teacher:${kind}: not a finding kind; use one of ${FINDING_KINDS.join(', ')}`);
    return async (p) => teacherForFinding(p, kind as (typeof FINDING_KINDS)[number], { seed })?.patch ?? null;
  }
  if (spec.startsWith('fixed:')) {
    // a packet-blind control: the same patch whatever the packet (its gain is 0 by construction)
    const file = spec.slice(6);
    let patch: unknown;
    try {
      patch = toPatch(JSON.parse(readFileSync(file, 'utf8')));
    } catch (e) {
      throw new ConfigError('--engineer', `fixed:${file} is not a readable patch file (${(e as Error).message})`);
    }
    return async () => patch;
  }
  // an hf: engineer's run folder: its greedy patch through the torch sampler
  const hf = spec.endsWith('.onnx') ? null : hfRunFile(spec, 'engineer.onnx');
  if (hf) return (p) => proposeFromHfRun(spec, hf, p);
  const path = spec.endsWith('.onnx') ? spec : join(spec, 'engineer.onnx');
  const eng = loadBuiltinEngineer(path);
  return async (p) => (await eng.propose(p, { temperature: 0 }))[0] ?? null;
}

const won = (r: EpisodeRecord): number => (r.outcome.won ? 1 : 0);

export async function benchConditioning(cluster: Cluster, o: ConditioningOptions): Promise<ConditioningResult> {
  const log = o.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const n = o.batches ?? 8;
  if (n < 2) throw new ConfigError('--batches', `conditioning needs at least 2 batches (a packet and another one), got ${n}`);
  const split = o.split ?? envDescriptor(o.env).splits.heldout;
  const seed = o.seed ?? 0;
  const propose = proposer(o.engineer, seed);
  const batches = makeBatches(o.env, { count: n, size: o.size ?? 10, split, seed: 9000 + seed });
  const dir = o.out ?? join('.hr1', 'conditioning');
  mkdirSync(dir, { recursive: true });
  const cache = new EpisodeCache(join(dir, `episodes-${createHash('sha256').update(`${o.env}|${o.target}`).digest('hex').slice(0, 10)}.sqlite`));
  // n vanilla rollouts, then three patched ones per batch
  const progress = countProgress({ label: `conditioning ${o.env}`, unit: 'batch rollouts', total: 4 * n, mode: o.progress ?? 'silent' });
  let rolled = 0;
  const tick = () => progress.update(++rolled);
  try {
    const bases: EpisodeRecord[][] = [];
    const packets: Packet[] = [];
    for (const b of batches) {
      const r = await rollout(cluster, { env: o.env, target: o.target, episodes: b }, { cache });
      tick();
      bases.push(r.records);
      packets.push(extractPacket(r.records));
    }
    const own = await Promise.all(packets.map((p) => propose(p)));
    // the per-episode outcome of a patch on batch i (an invalid or missing patch plays vanilla)
    const rate = (rs: EpisodeRecord[]): number => rs.reduce((s, r) => s + (r.interventions?.rate ?? 0), 0);
    const outcomes = async (i: number, patch: unknown): Promise<{ wins: number[]; valid: boolean; hash: string; interventions: number }> => {
      if (patch === null) return { wins: bases[i]!.map(won), valid: true, hash: 'none', interventions: 0 };
      const spec = { env: o.env, target: o.target, episodes: batches[i]!, cache, base: bases[i]! };
      const r = await rewardOf(cluster, { ...spec, patch });
      if (!r.valid) return { wins: bases[i]!.map(won), valid: false, hash: r.patchHash, interventions: 0 };
      const recs = (await rollout(cluster, { env: o.env, target: o.target, episodes: batches[i]!, patch }, { cache })).records;
      return { wins: recs.map(won), valid: true, hash: r.patchHash, interventions: rate(recs) };
    };
    const hashOf = (p: unknown) => (p === null ? 'none' : patchHash(toPatch(p)));
    const gain: number[][] = [];
    const emptyGain: number[][] = [];
    const perBatch: ConditioningResult['per_batch'] = [];
    const sums = { own: 0, other: 0, empty: 0, episodes: 0, same: 0, valid: 0, interventions: 0 };
    for (let i = 0; i < n; i++) {
      const j = (i + 1) % n;
      const ownP = own[i]!;
      const otherP = own[j]!;
      const emptyP = await propose(emptyPacket(packets[i]!));
      const [a, b, c] = [await outcomes(i, ownP).finally(tick), await outcomes(i, otherP).finally(tick), await outcomes(i, emptyP).finally(tick)];
      const base = bases[i]!.map(won);
      const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
      const d = (w: number[]) => mean(w.map((x, k) => x - base[k]!));
      gain.push(a.wins.map((x, k) => x - b.wins[k]!));
      emptyGain.push(a.wins.map((x, k) => x - c.wins[k]!));
      const row = { batch: i, own: d(a.wins), other: d(b.wins), empty: d(c.wins), ownHash: hashOf(ownP), otherHash: hashOf(otherP) };
      perBatch.push(row);
      sums.own += row.own * base.length;
      sums.other += row.other * base.length;
      sums.empty += row.empty * base.length;
      sums.episodes += base.length;
      if (canonicalJson(ownP) === canonicalJson(otherP)) sums.same++;
      if (a.valid) sums.valid++;
      sums.interventions += a.interventions;
      log(`  batch ${i + 1}/${n}: Δ own ${row.own.toFixed(3)}, other packet's ${row.other.toFixed(3)}, empty packet's ${row.empty.toFixed(3)}${canonicalJson(ownP) === canonicalJson(otherP) ? ' (same patch)' : ''}`);
    }
    progress.finish();
    return {
      env: o.env,
      target: o.target,
      engineer: o.engineer,
      split,
      batches: n,
      episodes: sums.episodes,
      own_delta: sums.own / sums.episodes,
      other_delta: sums.other / sums.episodes,
      empty_delta: sums.empty / sums.episodes,
      conditioning_gain: bootstrapGroups(gain, { seed: `conditioning|${seed}` }),
      empty_gain: bootstrapGroups(emptyGain, { seed: `conditioning-empty|${seed}` }),
      own_intervention_rate: sums.interventions / sums.episodes,
      same_patch_rate: sums.same / n,
      valid_rate: sums.valid / n,
      per_batch: perBatch,
    };
  } finally {
    progress.stop();
    cache.close();
  }
}
