/**
 * A tiny DBBench learned target: trained by the real torch learner on synthetic tasks over the
 * training split's tables, exported to ONNX, served through lmModel and played on real dev tasks
 * (SQLite) through runEpisode, against the same config untrained.
 */
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runEpisode, type EpisodeRecord } from '../../../harness/index.ts';
import { EVAL_SPLIT, envFactory, taskIds } from '../../../policies/targets/lm/bc.ts';
import { lmModel } from '../../../policies/targets/lm/model.ts';
import { buildZoo, readMeta, resolveConfig, ZOO, type ZooConfig } from '../../../policies/targets/lm/zoo.ts';

const dir = mkdtempSync(join(tmpdir(), 'hr1-zoo-db-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

const zoo: ZooConfig[] = [
  ...ZOO,
  { ...ZOO.find((z) => z.name === 'db-xs-384-a')!, name: 'db-untrained', steps: 0 },
  // value slots (and name slots), with rotary positions and token shift
  { ...ZOO.find((z) => z.name === 'db-xs-384-a')!, name: 'db-values', steps: 40, slots: 'values', rope: true, tokenShift: true },
];
// reads and writes of the dev split
const TASKS = taskIds('dbbench', EVAL_SPLIT.dbbench).slice(0, 3);
// the protocol's header as the env reads it, and a whole one-line SQL operation
const HEADER = /^Action: (Operation|Answer)\n/;
const OPERATION = /^Action: Operation\n```sql\n(select|insert|update|delete) [^\n]+\n```$/i;

async function play(name: string): Promise<EpisodeRecord[]> {
  const m = await lmModel(name, { dir, zoo });
  try {
    return await Promise.all(TASKS.map((id) => runEpisode(envFactory('dbbench', id), { model: m, seed: 1 })));
  } finally {
    await m.release();
  }
}

const built = buildZoo({ only: ['db-xs-384-a', 'db-untrained', 'db-values'], tiny: true, dir, zoo, jobs: 2 });

test('dbbench zoo - a tiny target trains on synthetic tasks and writes the protocol header on dev tasks; the untrained one does not', async (t) => {
  t.timeout(600_000); // a loaded 2-core machine; alone the two tiny builds take well under a minute
  const results = await built;
  const r = results.find((x) => x.id === 'db-xs-384-a@tiny')!;
  t.true(r.lossLast < r.lossFirst * 0.6, `loss ${r.lossFirst.toFixed(2)} → ${r.lossLast.toFixed(2)}`);
  const meta = readMeta(resolveConfig('db-xs-384-a@tiny', zoo), dir)!;
  t.is(meta.maxNewTokens, 96);
  t.true(meta.words.includes('select') && meta.words.includes('operation'));
  const trained = await play('db-xs-384-a@tiny');
  const untrained = await play('db-untrained@tiny');
  const share = (recs: EpisodeRecord[], re = HEADER): number => {
    const steps = recs.flatMap((x) => x.steps);
    return steps.filter((s) => re.test(s.proposal ?? '')).length / Math.max(1, steps.length);
  };
  for (const rec of trained) t.log(`${rec.taskId}: ${rec.outcome.status}, ${rec.steps.length} steps; first reply ${JSON.stringify(rec.steps[0]?.proposal?.slice(0, 140))}`);
  t.log(`protocol header: trained ${(share(trained) * 100).toFixed(0)} %, untrained ${(share(untrained) * 100).toFixed(0)} %; whole SQL operation: trained ${(share(trained, OPERATION) * 100).toFixed(0)} %`);
  t.true(share(trained) >= 0.5);
  t.true(share(untrained) < share(trained));
  for (const rec of [...trained, ...untrained]) t.not(rec.outcome.status, 'model_error');
});

test('dbbench zoo - a value-slot target reads the question with vslot K and its replies carry the words, never a slot', async (t) => {
  t.timeout(600_000);
  await built;
  const meta = readMeta(resolveConfig('db-values@tiny', zoo), dir)!;
  t.true(meta.words.includes('vslot') && meta.words.includes('cslot'));
  const m = await lmModel('db-values@tiny', { dir, zoo });
  try {
    // the dev question's spelled or capitalised words are slots in the window the model reads
    let seen: Parameters<typeof m.window>[0] | null = null;
    await runEpisode(envFactory('dbbench', TASKS[0]!), { model: { name: 'spy', decide: (ctx) => ((seen ??= { messages: ctx.messages.map((x) => ({ ...x })) }), m.decide(ctx)) }, seed: 1 });
    const window = m.tokenizer.decode(m.window(seen!));
    t.regex(window, /vslot 1\b/);
    t.regex(window, /tslot/);
  } finally {
    await m.release();
  }
  const recs = await play('db-values@tiny');
  const proposals = recs.flatMap((r) => r.steps.map((s) => s.proposal ?? ''));
  t.log(`first replies: ${recs.map((r) => JSON.stringify(r.steps[0]?.proposal?.slice(0, 120))).join(' | ')}`);
  // a slot the model writes is the word it stands for (a number beyond the question's slots would stay; tiny models rarely write one)
  t.true(proposals.filter((p) => /\bvslot \d+/.test(p)).length <= proposals.length / 4);
  for (const rec of recs) t.not(rec.outcome.status, 'model_error');
});
