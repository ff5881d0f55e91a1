/**
 * `hr1 exp compare A B`: two sweep run folders that scored the same targets on the same test
 * episodes (e.g. the engineer's sweep and the best fixed patch's, sweep.main.yaml and
 * sweep.main-fixed.yaml), cell by cell: the paired difference A − B of their methods' primary
 * metric on each target × env, the cells where A is above or below B with the interval clear of
 * 0, and the mean difference over cells with a bootstrap interval. A cell whose target an engineer of
 * either run was trained on is left out (and listed). From stored rows only.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrapMean, pairedDelta, type Interval } from '../report/bootstrap.ts';
import { taskSeedMatrix } from '../report/data.ts';
import { fmtDelta, textTable } from '../report/markdown.ts';
import { primaryMetric, type EvalRow } from '../runner/evaluate.ts';
import { ExpError } from '../runner/errors.ts';
import { RunDir, type RunMeta } from '../runner/run-dir.ts';
import { engineerTrainedOn } from './sweep.ts';

export interface SweepComparison {
  a: { dir: string; method: string };
  b: { dir: string; method: string };
  cells: { target: string; env: string; a: Interval | null; b: Interval | null; diff: Interval }[];
  /** cells left out: an engineer of A or B was trained on the target (no unseen target) */
  trainedOn: { target: string; env: string }[];
  above: number;
  below: number;
  /** mean over cells of the difference, with a bootstrap interval over cells */
  mean: Interval | null;
}

function readSweep(dir: string): { meta: RunMeta; rows: EvalRow[] } {
  if (!existsSync(join(dir, 'run.json'))) throw new ExpError('EXP_RUN_DIR', `${dir} is not a run folder (no run.json); pass two folders that hr1 exp sweep wrote`, { data: { dir } });
  const run = new RunDir(dir, { create: false });
  const meta = run.readMeta();
  const rows = run.rows() as EvalRow[];
  run.close();
  if (meta.exp !== 'sweep') throw new ExpError('EXP_RUN_DIR', `${dir} holds an exp ${meta.exp} run; compare takes two exp sweep run folders`, { data: { dir } });
  return { meta, rows };
}

/** Compare two sweep run folders cell by cell (paired on the same test episodes). */
export function compareSweeps(dirA: string, dirB: string, o: { resamples?: number; level?: number; seed?: number } = {}): SweepComparison {
  const A = readSweep(dirA);
  const B = readSweep(dirB);
  const ma = A.meta.methods[0]!.name;
  const mb = B.meta.methods[0]!.name;
  const boot = (seed: string) => ({ resamples: o.resamples ?? 1000, level: o.level ?? 0.95, seed: `${o.seed ?? 0}|${seed}` });
  const cells: SweepComparison['cells'] = [];
  const trainedOn: SweepComparison['trainedOn'] = [];
  for (const target of A.meta.targets.filter((t) => B.meta.targets.includes(t))) {
    for (const env of Object.keys(A.meta.splits).filter((e) => e in B.meta.splits)) {
      if (engineerTrainedOn(A.meta, target, env) || engineerTrainedOn(B.meta, target, env)) {
        trainedOn.push({ target, env });
        continue;
      }
      const metric = primaryMetric(env);
      const mat = (x: { rows: EvalRow[] }, method: string) => taskSeedMatrix(x.rows.filter((r) => r.env === env && r.target === target && r.method === method && r.variant === ''), metric);
      const a = mat(A, ma);
      const b = mat(B, mb);
      if (!a || !b) continue;
      let diff: Interval;
      try {
        diff = pairedDelta([a], [b], boot(`${target}|${env}`));
      } catch (e) {
        throw new ExpError('EXP_CONFIG', `${target} on ${env}: the two sweeps did not score the same test episodes (${(e as Error).message}); compare sweeps run with the same test tasks, seeds and seed`, { data: { target, env } });
      }
      const va = mat(A, 'vanilla');
      const vb = mat(B, 'vanilla');
      cells.push({ target, env, a: va ? pairedDelta([a], [va], boot(`a|${target}|${env}`)) : null, b: vb ? pairedDelta([b], [vb], boot(`b|${target}|${env}`)) : null, diff });
    }
  }
  if (cells.length === 0) throw new ExpError('EXP_NO_RESULTS', `${dirA} and ${dirB} share no target × env cell with results; compare sweeps over the same targets and envs`, { data: { a: dirA, b: dirB } });
  return {
    a: { dir: dirA, method: ma },
    b: { dir: dirB, method: mb },
    cells,
    trainedOn,
    above: cells.filter((c) => c.diff.lo > 0).length,
    below: cells.filter((c) => c.diff.hi < 0).length,
    mean: bootstrapMean(cells.map((c) => c.diff.mean), boot('mean')),
  };
}

/** The comparison as a text table and a summary line. */
export function formatComparison(c: SweepComparison): string {
  const head = ['target', 'env', `${c.a.method} Δ`, `${c.b.method} Δ`, `${c.a.method} − ${c.b.method}`];
  const rows = c.cells.map((x) => [x.target, `${x.env} (${primaryMetric(x.env)})`, fmtDelta(x.a), fmtDelta(x.b), fmtDelta(x.diff)]);
  const pos = c.cells.filter((x) => x.diff.mean > 0).length;
  const neg = c.cells.filter((x) => x.diff.mean < 0).length;
  return [
    `exp compare — ${c.a.method} (${c.a.dir}) against ${c.b.method} (${c.b.dir}); points, paired on the same test episodes, 95% CI`,
    textTable(head, rows),
    `${c.a.method} above ${c.b.method} in ${pos} of ${c.cells.length} cells (interval above 0: ${c.above}), below in ${neg} (interval below 0: ${c.below}); mean difference over cells ${fmtDelta(c.mean)} points`,
    ...(c.trainedOn.length ? [`left out: ${c.trainedOn.map((x) => `${x.target} (${x.env})`).join(', ')}, which an engineer of these runs was trained on`] : []),
  ].join('\n');
}
