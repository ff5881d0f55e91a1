/**
 * Learned targets decode through the batcher: episodes in flight on one model give the
 * episodes one at a time gives, byte for byte, on ALFWorld and WebShop; a zoo model exported
 * before the decode graph is LM_STALE until `hr1 zoo build` re-exports it; a model file that
 * does not match its meta.json is LM_BAD_META.
 */
import test from 'ava';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runEpisodes } from '../../../actors/target.ts';
import { baseHarness, type EpisodeRecord } from '../../../harness/index.ts';
import { LearnerProcess } from '../../../learner/index.ts';
import { isDecodeGraph } from '../../../learner/onnx-meta.ts';
import { EVAL_SPLIT, taskIds, type LmEnv } from '../../../policies/targets/lm/bc.ts';
import { lmModel } from '../../../policies/targets/lm/model.ts';
import { buildZoo, modelDir, resolveConfig, ZOO, type ZooConfig } from '../../../policies/targets/lm/zoo.ts';

const dir = mkdtempSync(join(tmpdir(), 'hr1-lm-batched-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

// little training: the samples stay spread out, so any difference in the numbers would show
const xs = { dModel: 64, nLayers: 1, nHeads: 2, dFf: 128 };
const zoo: ZooConfig[] = [
  ...ZOO,
  { name: 'alf-batch', envs: ['alfworld'], ...xs, maxLen: 192, episodes: 12, steps: 30, seed: 1 },
  { name: 'ws-batch', envs: ['webshop'], ...xs, maxLen: 256, episodes: 12, steps: 30, seed: 1, slots: true },
  // rotary positions and token shift (the graph reads prev_ids), the compact room and masking
  { name: 'alf-shift-batch', envs: ['alfworld'], ...xs, maxLen: 192, episodes: 12, steps: 30, seed: 1, rope: true, tokenShift: true, compactRoom: true, elide: 2 },
];
const built = buildZoo({ only: ['alf-batch', 'ws-batch', 'alf-shift-batch'], dir, zoo, jobs: 2 });

/** episodes played both ways (all in flight at once, then one decision at a time) */
const EPISODES = 6;

async function play(name: string, env: LmEnv, concurrency: number): Promise<{ records: EpisodeRecord[]; peak: number; meanRows: number; prefixShare: number }> {
  // alone: one decision at a time, every prompt prefilled from scratch; else the defaults (batcher, prefix cache)
  const m = await lmModel(name, { dir, zoo, ...(concurrency === 1 ? { maxBatch: 1, gatherMs: 0, prefixCache: 0 } : {}) });
  try {
    const episodes = taskIds(env, EVAL_SPLIT[env]).slice(0, EPISODES).map((taskId, i) => ({ taskId, seed: 1 + (i % 3) }));
    const records = await runEpisodes(env, {}, baseHarness(), m, episodes, concurrency);
    return { records, peak: m.stats.peakRows, meanRows: m.stats.stepRows / Math.max(1, m.stats.stepCalls), prefixShare: m.stats.prefixTokens / Math.max(1, m.stats.promptTokens) };
  } finally {
    await m.release();
  }
}

for (const [name, env] of [['alf-batch', 'alfworld'], ['ws-batch', 'webshop'], ['alf-shift-batch', 'alfworld']] as const) {
  test(`lm batched - ${name} (${env}): ${EPISODES} episodes in flight on one model (batcher, prefix cache) give byte for byte the episodes one decision at a time from scratch gives`, async (t) => {
    await built;
    const one = await play(name, env, 1);
    const many = await play(name, env, EPISODES);
    t.is(one.peak, 1);
    t.is(one.prefixShare, 0);
    t.true(many.peak > 4, `rows in flight at most ${many.peak}`);
    t.true(many.prefixShare > 0.2, `prefix cache share ${many.prefixShare}`);
    t.log(`${env}: ${many.records.reduce((a, r) => a + r.steps.length, 0)} decisions, up to ${many.peak} rows per step (mean ${many.meanRows.toFixed(1)}), ${(many.prefixShare * 100).toFixed(0)}% of prompt tokens from the prefix cache`);
    t.is(JSON.stringify(many.records), JSON.stringify(one.records));
    t.true(new Set(many.records.flatMap((r) => r.steps.map((s) => s.action))).size > 5, 'the episodes say different things');
  });
}

test('lm batched - a model exported before the decode graph is LM_STALE; hr1 zoo build re-exports it from its checkpoint and it plays the same', async (t) => {
  await built;
  const c = resolveConfig('alf-batch', zoo);
  const stale = mkdtempSync(join(tmpdir(), 'hr1-lm-stale-'));
  try {
    cpSync(modelDir(c, dir), modelDir(c, stale), { recursive: true });
    const want = (await play('alf-batch', 'alfworld', 16)).records.slice(0, 4);
    const lp = await LearnerProcess.start();
    try {
      await lp.load({ path: join(modelDir(c, stale), 'model.pt'), device: 'cpu' });
      await lp.export({ path: join(modelDir(c, stale), 'model.onnx'), graph: 'full' });
    } finally {
      await lp.close();
    }
    const e = await t.throwsAsync(lmModel('alf-batch', { dir: stale, zoo }));
    t.is((e as { code?: string }).code, 'LM_STALE');
    t.regex(e!.message, /run `hr1 zoo build --only alf-batch` to re-export it from its checkpoint/);
    const logs: string[] = [];
    const [r] = await buildZoo({ only: ['alf-batch'], dir: stale, zoo, log: (l) => logs.push(l) });
    t.true(r!.cached);
    t.regex(logs.join('\n'), /re-exported its decode graph/);
    t.true(isDecodeGraph(readFileSync(join(modelDir(c, stale), 'model.onnx'))));
    const m = await lmModel('alf-batch', { dir: stale, zoo });
    try {
      const eps = taskIds('alfworld', EVAL_SPLIT.alfworld).slice(0, 4).map((taskId, i) => ({ taskId, seed: 1 + (i % 3) }));
      t.is(JSON.stringify(await runEpisodes('alfworld', {}, baseHarness(), m, eps, 4)), JSON.stringify(want));
    } finally {
      await m.release();
    }
    // a meta.json that does not match the file
    const metaPath = join(modelDir(c, stale), 'meta.json');
    const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as { vocabSize: number };
    writeFileSync(metaPath, JSON.stringify({ ...meta, vocabSize: meta.vocabSize + 1 }));
    const bad = await t.throwsAsync(lmModel('alf-batch', { dir: stale, zoo }));
    t.is((bad as { code?: string }).code, 'LM_BAD_META');
    t.regex(bad!.message, /does not match its metadata: its vocabulary has \d+ ids, the metadata says \d+; rebuild or re-export it \(`hr1 zoo build --only alf-batch --force`/);
  } finally {
    rmSync(stale, { recursive: true, force: true });
  }
});
