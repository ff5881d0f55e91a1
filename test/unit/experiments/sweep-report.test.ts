/**
 * The sweep's table counts only targets the engineer never trained on: a target among its training
 * targets (an engineer trained on several, `target: lm/a+lm/b`) is shown, marked "(trained on)" and
 * left out of the positive-cell count and the mean gain.
 */
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareSweeps, formatComparison } from '../../../experiments/exp/compare.ts';
import { RunDir } from '../../../experiments/runner/run-dir.ts';
import { reportSweep } from '../../../experiments/exp/sweep.ts';
import type { EvalRow, Outcome } from '../../../experiments/runner/evaluate.ts';
import type { RunMeta } from '../../../experiments/runner/run-dir.ts';

// 10 tasks × 1 seed: vanilla wins `base` of them, the engineer `patched`
function rows(target: string, base: number, patched: number): EvalRow[] {
  const outs = (wins: number): Outcome[] => Array.from({ length: 10 }, (_, i) => [`t${i}`, 0, i < wins ? 1 : 0, i < wins ? 1 : 0, 10]);
  const row = (method: string, wins: number): EvalRow => ({ key: `${target}|${method}`, kind: 'eval', env: 'alfworld', target, method, packet: method === 'vanilla' ? null : 0, variant: '', patchHash: '', patch: null, packetHash: null, errors: 0, outcomes: outs(wins) }) as EvalRow;
  return [row('vanilla', base), row('engineer-grpo', patched)];
}

function meta(engineerTargets?: string[]): RunMeta {
  return {
    kind: 'hr1-exp/1',
    exp: 'sweep',
    config: { bootstrap: { resamples: 200, seed: 0, level: 0.95 }, train: { packets: 2, batchSize: 10 } },
    targets: ['lm/a', 'lm/b', 'lm/c'],
    simulated: [],
    methods: [{ name: 'engineer-grpo', kind: 'engineer', label: 'engineer, SFT+GRPO', available: true }],
    splits: { alfworld: { train: 'seen_dev', test: ['seen_test'], testTasks: 10, seeds: [0] } },
    disjoint: { sets: [], engineers: { alfworld: { dir: 'runs/e/alfworld', target: 'lm/x', ...(engineerTargets ? { targets: engineerTargets } : {}), split: 'seen_dev' } } },
  };
}

// lm/a gains 50 points (a training target), lm/b 10, lm/c loses 10
const ALL = [...rows('lm/a', 2, 7), ...rows('lm/b', 2, 3), ...rows('lm/c', 3, 2)];

test('sweep report - a target the engineer was trained on is marked and not counted', (t) => {
  const seen = reportSweep(meta(['lm/x', 'lm/a']), ALL);
  t.regex(seen.markdown, /\| lm\/a \(trained on\) \| \+50\.0/);
  t.notRegex(seen.markdown, /lm\/b \(trained on\)/);
  t.regex(seen.markdown, /positive cells: 1 of 2 \(CI above 0: \d; negative: 1\); mean gain \+0\.0 .*not counted: 1 target the engineer was trained on/);
  t.regex(seen.markdown, /on lm\/x \+ lm\/a \(the engineer's own: lm\/x\)/);
  // the same rows with a one-target engineer: every cell counts
  const unseen = reportSweep(meta(), ALL);
  t.regex(unseen.markdown, /positive cells: 2 of 3 .*mean gain \+16\.7/);
  t.notRegex(unseen.markdown, /trained on\)/);
});

test('exp compare - leaves out a cell whose target an engineer of either run was trained on, and says so', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'hr1-cmp-'));
  try {
    const write = (name: string, m: RunMeta, rs: EvalRow[]) => {
      const run = new RunDir(join(root, name), { create: true });
      run.writeMeta(m);
      for (const r of rs) run.append(r);
      run.close();
    };
    write('multi', meta(['lm/x', 'lm/a']), ALL);
    write('single', meta(), [...rows('lm/a', 2, 2), ...rows('lm/b', 2, 2), ...rows('lm/c', 3, 3)]);
    const c = compareSweeps(join(root, 'multi'), join(root, 'single'), { resamples: 200 });
    t.deepEqual(c.cells.map((x) => x.target), ['lm/b', 'lm/c']);
    t.deepEqual(c.trainedOn, [{ target: 'lm/a', env: 'alfworld' }]);
    t.regex(formatComparison(c), /left out: lm\/a \(alfworld\), which an engineer of these runs was trained on/);
    // two one-target engineers: nothing left out
    t.is(compareSweeps(join(root, 'single'), join(root, 'single'), { resamples: 200 }).cells.length, 3);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
