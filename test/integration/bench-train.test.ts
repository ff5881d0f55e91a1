import test from 'ava';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hr1 } from './processes.ts';

test('bench train --json - synchronous and pipelined runs on the embedded cluster: the keys, a positive speedup figure, the projection rows', async (t) => {
  t.timeout(600_000);
  const dir = join(tmpdir(), `hr1-bench-train-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const cfg = join(dir, 'cfg.yaml');
  writeFileSync(cfg, 'env: alfworld\ntarget: sim/llama-3b\nbatchSize: 6\nmodel: { dModel: 64, nLayers: 1, nHeads: 2, maxLen: 768 }\nsft: { batches: 1, k: 2, epochs: 2, batchSize: 8 }\ngrpo: { iterations: 3, k: 3 }\n');
  const p = hr1(['bench', 'train', '--config', cfg, '--clusters', 'embedded', '--json']);
  t.is(await p.exited, 0, p.out());
  const out = p.out();
  const j = JSON.parse(out.slice(out.indexOf('{\n'), out.lastIndexOf('}') + 1)) as Record<string, any>;
  for (const k of ['sync_s_per_iter', 'pipelined_s_per_iter', 'speedup', 'max_staleness']) t.is(typeof j[k], 'number', k);
  t.is(j.max_staleness, 1);
  t.true(j.sync_s_per_iter > 0 && j.pipelined_s_per_iter > 0);
  // the speedup is the ratio of the two (each rounded to 3 decimals)
  t.true(Math.abs(j.sync_s_per_iter / j.pipelined_s_per_iter - j.speedup) < 0.01, JSON.stringify(j));
  const e = j.clusters.embedded;
  t.is(e.curve_sync.length, 3);
  t.is(e.curve_pipelined.length, 3);
  // iteration 1 samples from v0 in both modes: the same group, the same mean Δ
  t.is(e.curve_pipelined[0], e.curve_sync[0]);
  t.deepEqual(j.projection.rows.map((r: { learner: string; workers: number }) => `${r.learner}:${r.workers}`), ['cpu:8', 'cpu:64', 'cpu:512', 'gpu:8', 'gpu:64', 'gpu:512']);
  rmSync(dir, { recursive: true, force: true });
});
