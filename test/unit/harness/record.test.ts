import test from 'ava';
import { EpisodeRecordSchema, baseHarness, composeHarness, runEpisode, type EpisodeRecord } from '../../../harness/index.ts';
import { envFactory, listTasks } from '../../../envs/registry.ts';
import { makeModel } from '../../../policies/targets/make.ts';
import { pack, unpack } from '../../../cluster/codec.ts';

const PATCH = {
  skills: ['Check every receptacle before giving up.'],
  rules: [{ hook: 'postFeedback', when: { pred: 'repeatedAction' }, effect: { type: 'inject_hint', message: 'Try a different action.' } }],
  code: [{ hook: 'init', source: "function hook(ctx, nb) { return { type: 'note', key: 'n', value: { a: [1, 'x', null, true] } }; }" }],
};

async function records(): Promise<EpisodeRecord[]> {
  const model = await makeModel('sim/qwen-3b');
  const out: EpisodeRecord[] = [];
  for (const [env, split] of [['alfworld', 'valid_seen'], ['webshop', 'dev']] as const) {
    const taskId = listTasks(env, split)[0]!;
    out.push(await runEpisode(envFactory(env, taskId, {}), { model, seed: 0, harness: composeHarness(baseHarness(), PATCH) }));
    out.push(await runEpisode(envFactory(env, taskId, {}), { model, seed: 1 }));
  }
  return out;
}

test('record schema - describes exactly what the runtime builds; parsing keeps every value and is stable', async (t) => {
  for (const rec of await records()) {
    const r = EpisodeRecordSchema.safeParse(rec);
    if (!r.success) return t.fail(r.error.message);
    // the same keys and values (the order is the wire order, see record.ts)
    t.deepEqual(r.data, rec);
    t.deepEqual(Object.keys(r.data).sort(), Object.keys(rec).sort());
    // what the cache stores (msgpack of a parsed record) parses back to the same bytes
    const again = EpisodeRecordSchema.parse(unpack(pack(r.data)));
    t.is(JSON.stringify(again), JSON.stringify(r.data));
    t.deepEqual(Buffer.from(pack(again)), Buffer.from(pack(r.data)));
  }
});

test('record schema - the top-level key order is the wire order records have always had', async (t) => {
  const [rec] = await records();
  t.deepEqual(Object.keys(EpisodeRecordSchema.parse(rec)), ['v', 'env', 'taskId', 'seed', 'model', 'steps', 'outcome', 'hooks', 'goal', 'taskType', 'harness', 'skills', 'toolHint', 'notebook', 'interventions']);
  // a record made before interventions were counted still parses, without them
  const { interventions: _i, ...old } = rec!;
  t.deepEqual(Object.keys(EpisodeRecordSchema.parse(old)), ['v', 'env', 'taskId', 'seed', 'model', 'steps', 'outcome', 'hooks', 'goal', 'taskType', 'harness', 'skills', 'toolHint', 'notebook']);
  t.deepEqual(Object.keys(EpisodeRecordSchema.parse(rec).outcome), ['status', 'won', 'reward', 'steps', 'end', 'error']);
});

test('record schema - strict: an unknown key, a missing key or a wrong type is rejected with its path', async (t) => {
  const [rec] = await records();
  const r = rec!;
  const extra = EpisodeRecordSchema.safeParse({ ...r, extra: 1 });
  t.false(extra.success);
  const { goal: _goal, ...missing } = r;
  const m = EpisodeRecordSchema.safeParse(missing);
  t.false(m.success);
  t.deepEqual(m.success ? [] : m.error.issues[0]!.path, ['goal']);
  const badStep = EpisodeRecordSchema.safeParse({ ...r, steps: [{ ...r.steps[0]!, extra: true }] });
  t.false(badStep.success);
  const badStatus = EpisodeRecordSchema.safeParse({ ...r, outcome: { ...r.outcome, status: 'maybe' } });
  t.false(badStatus.success);
  const badNotebook = EpisodeRecordSchema.safeParse({ ...r, notebook: { f: () => 1 } });
  t.false(badNotebook.success);
  const badCounters = EpisodeRecordSchema.safeParse({ ...r, hooks: [{ ...r.hooks[0]!, counters: { ...r.hooks[0]!.counters, bogus: 0 } }] });
  t.false(badCounters.success);
});
