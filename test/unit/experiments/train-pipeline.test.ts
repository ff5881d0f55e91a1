import test from 'ava';
import { PolicyVersions, StageClock, runTrainPipeline, samplingVersion, type PipelineStages } from '../../../experiments/train-pipeline.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Stages that record what ran when; V takes `rerunMs`, the others a few ms. */
function recorder(opts: { rerunMs?: number; noFailures?: number[]; failAt?: { stage: string; it: number } } = {}) {
  const events: string[] = [];
  const sampled: Record<number, number> = {};
  let updatesDone = 0;
  const updatedAtSample: Record<number, number> = {};
  let inV = 0;
  let maxInV = 0;
  const fail = (stage: string, it: number) => {
    if (opts.failAt && opts.failAt.stage === stage && opts.failAt.it === it) throw new Error(`${stage} ${it} failed`);
  };
  const stages: PipelineStages<{ it: number }, { it: number; v: number }, number> = {
    prepare: async (it) => {
      events.push(`R${it}`);
      await sleep(2);
      fail('R', it);
      return { it };
    },
    needsPolicy: (p) => !(opts.noFailures ?? []).includes(p.it),
    sample: async (p, v) => {
      // the version must exist: updates 1..v are in
      updatedAtSample[p.it] = updatesDone;
      sampled[p.it] = v;
      events.push(`S${p.it}@v${v}`);
      await sleep(2);
      fail('S', p.it);
      return { it: p.it, v };
    },
    score: async (p) => {
      inV++;
      maxInV = Math.max(maxInV, inV);
      events.push(`V${p.it}`);
      await sleep(opts.rerunMs ?? 20);
      inV--;
      fail('V', p.it);
      return p.it;
    },
    update: async (p) => {
      events.push(`U${p.it}`);
      await sleep(5);
      fail('U', p.it);
      updatesDone = p.it;
    },
  };
  return { stages, events, sampled, updatedAtSample, maxInV: () => maxInV };
}

test('train pipeline - samplingVersion: exactly N versions behind, never below v0', (t) => {
  t.deepEqual([1, 2, 3, 4, 5].map((i) => samplingVersion(i, 0)), [0, 1, 2, 3, 4]);
  t.deepEqual([1, 2, 3, 4, 5].map((i) => samplingVersion(i, 2)), [0, 0, 0, 1, 2]);
});

test('train pipeline - synchronous: R S V U of one iteration, then the next', async (t) => {
  const r = recorder();
  await runTrainPipeline(r.stages, { from: 1, to: 3, maxStaleness: 0, overlap: false });
  t.deepEqual(r.events, ['R1', 'S1@v0', 'V1', 'U1', 'R2', 'S2@v1', 'V2', 'U2', 'R3', 'S3@v2', 'V3', 'U3']);
  t.is(r.maxInV(), 1);
});

test('train pipeline - staleness 0 overlapped: the same versions and update order as the synchronous loop, the next rollout starts early', async (t) => {
  const r = recorder();
  await runTrainPipeline(r.stages, { from: 1, to: 4, maxStaleness: 0, overlap: true });
  t.deepEqual(r.sampled, { 1: 0, 2: 1, 3: 2, 4: 3 });
  t.deepEqual(r.events.filter((e) => e.startsWith('U')), ['U1', 'U2', 'U3', 'U4']);
  // every sample came after the update of the version it drew from
  for (const [it, v] of Object.entries(r.sampled)) t.true(r.updatedAtSample[Number(it)]! >= v);
  // R2 starts before U1 is done (its rollouts need no policy)
  t.true(r.events.indexOf('R2') < r.events.indexOf('U1'), r.events.join(' '));
  t.is(r.maxInV(), 1, 'with staleness 0 one group is rerun at a time');
});

test('train pipeline - staleness 1: sample t draws from version t−2, two groups are rerun at once, updates stay in order', async (t) => {
  const r = recorder({ rerunMs: 40 });
  await runTrainPipeline(r.stages, { from: 1, to: 6, maxStaleness: 1, overlap: true });
  t.deepEqual(r.sampled, { 1: 0, 2: 0, 3: 1, 4: 2, 5: 3, 6: 4 });
  for (const [it, v] of Object.entries(r.sampled)) t.true(r.updatedAtSample[Number(it)]! >= v, `iteration ${it} sampled v${v} after update ${r.updatedAtSample[Number(it)]}`);
  t.deepEqual(r.events.filter((e) => e.startsWith('U')), ['U1', 'U2', 'U3', 'U4', 'U5', 'U6']);
  t.is(r.maxInV(), 2, r.events.join(' '));
  // admission: iteration t does not start before update t−3 is in
  for (let it = 4; it <= 6; it++) t.true(r.events.indexOf(`R${it}`) > r.events.indexOf(`U${it - 3}`), r.events.join(' '));
});

test('train pipeline - a resumed run starts after its checkpoint; a batch without failures only updates', async (t) => {
  const r = recorder({ noFailures: [4] });
  await runTrainPipeline(r.stages, { from: 3, to: 5, maxStaleness: 1, overlap: true });
  t.deepEqual(r.sampled, { 3: 1, 5: 3 });
  t.deepEqual(r.events.filter((e) => e.startsWith('U')), ['U3', 'U4', 'U5']);
  t.false(r.events.includes('V4'));
});

for (const stage of ['R', 'S', 'V', 'U']) {
  test(`train pipeline - a failure in ${stage} stops the run with that error, later iterations are not started`, async (t) => {
    const r = recorder({ failAt: { stage, it: 2 }, rerunMs: 5 });
    const e = await t.throwsAsync(runTrainPipeline(r.stages, { from: 1, to: 20, maxStaleness: 1, overlap: true }));
    t.is(e?.message, `${stage} 2 failed`);
    t.false(r.events.includes('R8'), r.events.join(' '));
    // no update after the failed one (updates apply in order)
    t.false(r.events.includes(stage === 'U' ? 'U3' : 'U2'), r.events.join(' '));
  });
}

test('train pipeline - StageClock: busy time is the union of a stage\'s calls', async (t) => {
  const c = new StageClock();
  c.start();
  // each call's own start and end, to compare with the clock whatever the machine's load
  const spans: Record<string, [number, number][]> = { validation: [], update: [] };
  const timed = (stage: string, ms: number) =>
    c.time(stage, async () => {
      const s0 = performance.now();
      await sleep(ms);
      spans[stage]!.push([s0, performance.now()]);
    });
  await Promise.all([timed('validation', 60), timed('validation', 60), sleep(10).then(() => timed('update', 20))]);
  await sleep(40);
  const r = c.report();
  const union = (xs: [number, number][]) => Math.max(...xs.map((x) => x[1])) - Math.min(...xs.map((x) => x[0]));
  // two overlapping calls count once (their union), not twice
  t.true(Math.abs(r.busyMs.validation! - union(spans.validation!)) <= 3, `${JSON.stringify(r)} union ${union(spans.validation!)}`);
  t.true(r.busyMs.validation! < spans.validation!.reduce((a, x) => a + x[1] - x[0], 0) - 20);
  t.true(Math.abs(r.busyMs.update! - union(spans.update!)) <= 3, JSON.stringify(r));
  t.true(r.idleShare.validation! > 0 && Math.abs(r.busyShare.validation! + r.idleShare.validation! - 1) < 1e-9, JSON.stringify(r));
  t.is(r.busyMs.rollout, 0);
});

test('train pipeline - PolicyVersions: an old version leaves the store unless it is kept or aliased by a live one', async (t) => {
  const deleted: string[] = [];
  const v = new PolicyVersions({ delete: async (n) => (deleted.push(n), true) }, 'eng', 'onnx');
  for (const i of [0, 1, 2]) v.set(i, v.objectName(i));
  v.alias(3, 2);
  await v.release(3, 3);
  t.deepEqual(deleted, ['eng/v0.onnx', 'eng/v1.onnx']);
  // v2's object is v3's too: releasing v2 keeps it
  await v.release(4, 3);
  t.deepEqual(deleted, ['eng/v0.onnx', 'eng/v1.onnx']);
  t.is(v.get(3), 'eng/v2.onnx');
  const e = t.throws(() => v.get(0));
  t.regex(e!.message, /policy version 0 is not in the object store \(have 3\)/);
});
