import test from 'ava';
import { project, simulate } from '../../../experiments/bench/pipeline-sim.ts';

const base = { episodeMs: 100, baseEpisodes: 30, rerunEpisodes: 160, samplingMs: 500, updateMs: 3000, iterations: 20 };

test('pipeline sim - seeded: the same inputs give the same figures', (t) => {
  t.deepEqual(simulate({ ...base, workers: 8, staleness: 1, seed: 3 }), simulate({ ...base, workers: 8, staleness: 1, seed: 3 }));
});

test('pipeline sim - synchronous: an iteration is its stages end to end, so it never beats the sum of learner time and episode work', (t) => {
  for (const w of [1, 8, 64]) {
    const s = simulate({ ...base, workers: w, staleness: null });
    const episodeWork = ((base.baseEpisodes + base.rerunEpisodes) * base.episodeMs) / w;
    t.true(s.msPerIteration >= base.samplingMs + base.updateMs + episodeWork * 0.9, `${w} workers: ${s.msPerIteration}`);
  }
});

test('pipeline sim - pipelined is never slower, hides the learner when workers are few, and is bounded by the learner when they are many', (t) => {
  for (const w of [1, 8, 64, 512]) {
    const s = simulate({ ...base, workers: w, staleness: null });
    const p = simulate({ ...base, workers: w, staleness: 1 });
    t.true(p.msPerIteration <= s.msPerIteration * 1.01, `${w} workers`);
  }
  // one worker: the episodes are the bottleneck; the learner's 3.5 s hide behind them
  const one = simulate({ ...base, workers: 1, staleness: 1 });
  t.true(Math.abs(one.msPerIteration - (base.baseEpisodes + base.rerunEpisodes) * base.episodeMs) / one.msPerIteration < 0.1, String(one.msPerIteration));
  // many workers: the learner (update + sampling share a time line with the update chain) bounds an iteration
  const many = simulate({ ...base, workers: 512, staleness: 1 });
  t.true(many.msPerIteration >= base.updateMs * 0.99 && many.msPerIteration < (base.updateMs + base.samplingMs) * 1.2, String(many.msPerIteration));
});

test('pipeline sim - project: rows for 8, 64 and 512 workers on a CPU and a GPU learner', (t) => {
  const rows = project({ rolloutMs: 2500, samplingMs: 600, validationMs: 13_000, updateMs: 3500, cores: 2, baseEpisodes: 30, rerunEpisodes: 160 }, { staleness: 1, gpuFactor: 10 });
  t.deepEqual(rows.map((r) => `${r.learner}:${r.workers}`), ['cpu:8', 'cpu:64', 'cpu:512', 'gpu:8', 'gpu:64', 'gpu:512']);
  for (const r of rows) t.true(r.speedup >= 0.99 && r.worker_utilisation_pipelined <= 1);
});
