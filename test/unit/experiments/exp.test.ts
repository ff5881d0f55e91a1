import test from 'ava';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { SEED_SPACES, SplitOverlapError, buildSftDataset, makeBatches, rewardOf } from '../../../drivers/index.ts';
import { BEST_FIXED_MISSING, BEST_FIXED_PATCH, BEST_FIXED_TRANSFER } from '../../../experiments/runner/engineer-methods.ts';
import { methodAvailable } from '../../../experiments/runner/methods.ts';
import { runInfo } from '../../../experiments/runs/index.ts';
import { extractPacket } from '../../../policies/engineer/index.ts';
import { canonicalJson } from '../../../harness/index.ts';
import { TRAIN_SPLITS_FILE, resolveTrainConfig, trainSplits } from '../../../experiments/train.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { init } from '../../../cluster/init.ts';
import { BASELINES } from '../../../policies/targets/baselines.ts';
import { checkSplits } from '../../../experiments/exp/common.ts';
import { ENGINEER_MISSING, RUN_FILES, registerMethod, resetMethods, resolveExpMain, runExpAblate, runExpCoevolve, runExpCrosstask, runExpMain, runExpSweep, runReport, withoutHook, type ExpMainInput } from '../../../experiments/exp/index.ts';

const root = mkdtempSync(join(tmpdir(), 'hr1-exp-'));
const SMALL: ExpMainInput = { inProcess: true, progress: 'silent', test: { tasks: 6, seeds: [0, 1] }, train: { packets: 2, batchSize: 12 } };
const quiet = { stdout: () => {} };
const read = (d: string, f: string) => readFileSync(join(d, f), 'utf8');
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let rt: Awaited<ReturnType<typeof init>>;
let fullDir: string;
let fullRan = 0;
test.before(async () => {
  // the tests of this file share one in-process node and run at once; on a busy machine (CI) an lm
  // target's spawn can wait its turn on the event loop past the 60 s default, which is not what they test
  rt = await init({ inProcess: true, spawnTimeout: '5m' });
  fullDir = join(root, 'full');
  const r = await runExpMain({ ...SMALL, out: fullDir }, { ...quiet, cluster: rt.cluster });
  fullRan = r.ran;
});
test.after.always(async () => {
  await rt.shutdown();
  rmSync(root, { recursive: true, force: true });
});

test('exp main - end to end in-process: every file of the run folder, the table, SIMULATED named, engineer rows explained', (t) => {
  // 3 envs × (3 fixed baselines + 2 editor packets)
  t.is(fullRan, 15);
  for (const f of [RUN_FILES.meta, RUN_FILES.results, RUN_FILES.cache, RUN_FILES.csv, RUN_FILES.report, 'plots/main-primary.svg', 'plots/main-primary.png', 'plots/main-delta.svg', 'plots/main-delta.png']) t.true(existsSync(join(fullDir, f)), f);
  const md = read(fullDir, RUN_FILES.report);
  t.regex(md, /SIMULATED targets: sim\/qwen-3b/);
  t.regex(md, /\| prompted editor \(teacher\) \| \d+\.\d \[\d+\.\d, \d+\.\d\]/);
  t.true(md.includes(`| engineer, SFT+GRPO (Harness-R1) | ${ENGINEER_MISSING} |`));
  t.regex(md, /Paper ordering: Harness-R1 > prompted editors > vanilla > Self-Refine/);
  const rows = read(fullDir, RUN_FILES.results).trim().split('\n').map((l) => JSON.parse(l));
  t.is(rows.length, 15);
  t.true(rows.every((r) => r.outcomes.length === 12));
  const csv = read(fullDir, RUN_FILES.csv).trim().split('\n');
  t.is(csv.length, 1 + 15 * 12);
  t.is(csv[0], 'exp,env,target,method,packet,variant,patch_hash,task,seed,won,reward,intervention_rate');
  // every episode has its intervention rate (0 for vanilla), and the table a column for it
  t.true(rows.every((r) => r.outcomes.every((o: unknown[]) => typeof o[4] === 'number' && (o[4] as number) >= 0 && (o[4] as number) <= 0.5 + 1e-9)));
  t.true(rows.filter((r) => r.method === 'vanilla').every((r) => r.outcomes.every((o: unknown[]) => o[4] === 0)));
  t.regex(md, /\| method \|.*\| average \| interventions \|/);
  t.regex(md, /\| vanilla \|.*\| 0\.0 % \|/);
  t.deepEqual(readFileSync(join(fullDir, 'plots/main-primary.png')).subarray(0, 8), PNG_MAGIC);
});

test('exp main - a target per env: each env runs its own learned target, run.json and the report say which; a map without an env is a clear error', async (t) => {
  const dir = join(root, 'per-env');
  const target = { alfworld: 'lm/alf-s-256-ecrt-hi', webshop: 'lm/ws-s-256-srt-hi' };
  const r = await runExpMain({ inProcess: true, progress: 'silent', out: dir, envs: ['alfworld', 'webshop'], target, methods: ['vanilla', 'react'], test: { tasks: 4, seeds: [0] }, train: { packets: 1, batchSize: 10 } }, { ...quiet, cluster: rt.cluster });
  t.is(r.ran, 4);
  const rows = read(dir, RUN_FILES.results).trim().split('\n').map((l) => JSON.parse(l) as { env: string; target: string });
  t.deepEqual([...new Set(rows.map((x) => `${x.env}:${x.target}`))].sort(), ['alfworld:lm/alf-s-256-ecrt-hi', 'webshop:lm/ws-s-256-srt-hi']);
  const meta = JSON.parse(read(dir, RUN_FILES.meta)) as { targets: string[]; targetByEnv: Record<string, string>; simulated: string[] };
  t.deepEqual(meta.targetByEnv, target);
  t.deepEqual(meta.targets.sort(), Object.values(target).sort());
  t.deepEqual(meta.simulated, []);
  const md = read(dir, RUN_FILES.report);
  t.true(md.includes('lm/alf-s-256-ecrt-hi (alfworld), lm/ws-s-256-srt-hi (webshop)'));
  t.regex(md, /\*\*Targets:\*\* lm\/alf-s-256-ecrt-hi, lm\/ws-s-256-srt-hi\. None of them is SIMULATED\.\n/);
  t.regex(md, /\| vanilla \| \d+\.\d \[/);
  // the command line's form is the same map
  const cli = resolveExpMain({ envs: ['alfworld', 'webshop'], target: 'alfworld=lm/alf-s-256-ecrt-hi,webshop=lm/ws-s-256-srt-hi' });
  t.deepEqual(cli.target, target);
  const e = await t.throwsAsync(runExpMain({ inProcess: true, progress: 'silent', out: join(root, 'per-env-bad'), envs: ['alfworld', 'dbbench'], target, methods: ['vanilla'] }, { ...quiet, cluster: rt.cluster }));
  t.regex(e!.message, /target: no target for dbbench; add dbbench: <spec> to the map/);
  t.throws(() => resolveExpMain({ target: { minecraft: 'lm/alf-s-256-ecrt-hi' } }), { message: /target/ });
  // the shipped learned-target config resolves: one zoo target per env, its engineers' config
  const zoo = resolveExpMain({ config: 'experiments/configs/main.zoo.yaml' });
  t.deepEqual(Object.keys(zoo.target).sort(), ['alfworld', 'dbbench', 'webshop']);
  t.true(Object.values(zoo.target).every((x) => x.startsWith('lm/')));
  t.is(zoo.engineerConfig, 'experiments/configs/train.zoo.yaml');
  t.throws(() => resolveExpMain({ engineerConfig: 'nope.yaml' }), { message: /main\.engineerConfig: does not exist; give an hr1 train config/ });
});

test('exp main - killed part way, a rerun does only the missing units and writes identical files', async (t) => {
  const dir = join(root, 'resume');
  let n = 0;
  await t.throwsAsync(
    runExpMain({ ...SMALL, out: dir }, {
      ...quiet,
      cluster: rt.cluster,
      onUnitDone: () => {
        if (++n === 6) throw new Error('killed');
      },
    }),
    { message: 'killed' },
  );
  t.is(read(dir, RUN_FILES.results).trim().split('\n').length, 6);
  // a crash mid-write leaves half a line: it is dropped and that unit runs again
  appendFileSync(join(dir, RUN_FILES.results), '{"key":"main|alfw');
  const r = await runExpMain({ ...SMALL, out: dir }, { ...quiet, cluster: rt.cluster });
  t.is(r.skipped, 6);
  t.is(r.ran, 9);
  for (const f of [RUN_FILES.results, RUN_FILES.csv, RUN_FILES.report, RUN_FILES.meta, 'plots/main-primary.svg', 'plots/main-delta.svg']) t.is(read(dir, f), read(fullDir, f), f);
  const again = await runExpMain({ ...SMALL, out: dir }, { ...quiet, cluster: rt.cluster });
  t.is(again.ran, 0);
  t.is(again.skipped, 15);
});

test('exp main - records its episode sets as checked apart, and refuses an engineer trained on its test episodes', async (t) => {
  const meta = JSON.parse(read(fullDir, RUN_FILES.meta));
  t.deepEqual(meta.disjoint.sets.map((x: { env: string; name: string }) => `${x.env} ${x.name}`), ['alfworld evaluation packets', 'alfworld test', 'dbbench evaluation packets', 'dbbench test', 'webshop evaluation packets', 'webshop test']);
  t.true(meta.disjoint.sets.filter((x: { name: string }) => x.name === 'evaluation packets').every((x: { seeds: number[] }) => x.seeds[0]! >= SEED_SPACES.packets));
  t.regex(read(fullDir, RUN_FILES.report), /\*\*Disjoint:\*\* checked before the run/);
  // an engineer whose SFT batches are the test split's tasks under the test seeds: what hr1 train records for that config
  const eng = join(root, 'leaky-engineer');
  mkdirSync(join(eng, 'alfworld'), { recursive: true });
  const cfg = resolveTrainConfig(undefined, { env: 'alfworld', target: 'sim/qwen-3b', split: 'valid_seen', batchSize: 140, sft: { batches: 1 }, grpo: { iterations: 1 } });
  writeFileSync(join(eng, 'alfworld', TRAIN_SPLITS_FILE), JSON.stringify(trainSplits(cfg)));
  const e = await t.throwsAsync(runExpMain({ ...SMALL, envs: ['alfworld'], engineer: eng, out: join(root, 'leaky') }, { ...quiet, cluster: rt.cluster }), { instanceOf: SplitOverlapError });
  t.regex(e!.message, /alfworld: the test and engineer SFT episodes share \d+ \(task, seed\) pairs/);
  t.false(existsSync(join(root, 'leaky', RUN_FILES.results)), 'refused before any unit ran');
  // an engineer folder with a model but no record of its episodes cannot be checked: refused too
  const old = join(root, 'old-engineer');
  mkdirSync(old, { recursive: true });
  writeFileSync(join(old, 'engineer.onnx'), '');
  await t.throwsAsync(runExpMain({ ...SMALL, envs: ['alfworld'], engineer: old, out: join(root, 'old') }, { ...quiet, cluster: rt.cluster }), { message: /has no splits\.json for alfworld .* train it again with hr1 train/ });
  // an engineer apart from the test episodes: recorded with the SFT rows it learned from (0: untrained, and the report says so)
  const good = join(root, 'good-engineer');
  mkdirSync(join(good, 'alfworld'), { recursive: true });
  writeFileSync(join(good, 'alfworld', TRAIN_SPLITS_FILE), JSON.stringify(trainSplits(resolveTrainConfig(undefined, { env: 'alfworld', target: 'sim/qwen-3b' }))));
  writeFileSync(join(good, 'alfworld', 'sft.jsonl'), '{"a":1}\n{"a":2}\n{"a":3}\n');
  const o = resolveExpMain({ ...SMALL, envs: ['alfworld'], engineer: good });
  t.is(checkSplits(o, true).engineers.alfworld!.sftRows, 3);
  t.is(checkSplits(o, true).engineers.alfworld!.abstainRows, undefined);
  writeFileSync(join(good, 'alfworld', 'sft.jsonl'), '');
  t.is(checkSplits(o, true).engineers.alfworld!.sftRows, 0);
  // abstain rows (no proposal passed, the engineer learned the empty patch) are counted apart
  writeFileSync(join(good, 'alfworld', 'sft.jsonl'), '{"teacher":{"name":"abstain"}}\n{"teacher":{"name":"abstain"}}\n');
  t.deepEqual([checkSplits(o, true).engineers.alfworld!.sftRows, checkSplits(o, true).engineers.alfworld!.abstainRows], [2, 2]);
});

test('best fixed patch - the SFT proposal with the highest mean Δ over the training batches, one row for all packets', async (t) => {
  const eng = join(root, 'fixed-engineer');
  const batches = makeBatches('alfworld', { count: 3, size: 10, seed: 0 });
  const { rows } = await buildSftDataset({ cluster: rt.cluster, env: 'alfworld', target: 'sim/qwen-3b', batches, k: 3, out: join(eng, 'sft.jsonl') });
  t.true(rows.length >= 2, `${rows.length} SFT rows`);
  // what the method must pick: the largest mean Δ over the batches (brute force here)
  const mean = async (patch: unknown) => {
    let s = 0;
    for (const b of batches) s += (await rewardOf(rt.cluster, { env: 'alfworld', target: 'sim/qwen-3b', episodes: b, patch, cache: null })).delta;
    return s / batches.length;
  };
  const distinct = [...new Map(rows.map((r) => [r.patchHash, r])).values()];
  const means = await Promise.all(distinct.map((r) => mean(r.patch)));
  const chosen = await BEST_FIXED_PATCH.propose({ env: 'alfworld', target: 'sim/qwen-3b', packet: extractPacket([]), trainRecords: [], trainEpisodes: [], seed: 0, cluster: rt.cluster, cache: null, envOptions: {}, options: { engineer: eng, editor: { k: 1, select: 'first' } } });
  const idx = distinct.findIndex((r) => canonicalJson(r.patch) === canonicalJson(chosen));
  t.true(idx >= 0, 'one of the SFT proposals');
  t.is(means[idx], Math.max(...means));
  // carried over: chosen on the engineer's training target (its splits.json), whatever target it is then played on
  writeFileSync(join(eng, TRAIN_SPLITS_FILE), JSON.stringify({ kind: 'hr1-train-splits/1', envs: { alfworld: { target: 'sim/qwen-3b', split: 'valid_train', sft: [], verify: [], grpo: [] } } }));
  const carried = await BEST_FIXED_TRANSFER.propose({ env: 'alfworld', target: 'sim/no-such-profile', packet: extractPacket([]), trainRecords: [], trainEpisodes: [], seed: 0, cluster: rt.cluster, cache: null, envOptions: {}, options: { engineer: eng, editor: { k: 1, select: 'first' } } });
  t.is(canonicalJson(carried), canonicalJson(chosen), 'the patch the engineer target chose; the evaluated target is never played');
  await t.throwsAsync(BEST_FIXED_PATCH.propose({ env: 'alfworld', target: 'sim/no-such-profile', packet: extractPacket([]), trainRecords: [], trainEpisodes: [], seed: 0, cluster: rt.cluster, cache: null, envOptions: {}, options: { engineer: eng, editor: { k: 1, select: 'first' } } }), { message: /no-such-profile/ }, 'the retuned one plays the evaluated target');
  rmSync(join(eng, TRAIN_SPLITS_FILE));
  await t.throwsAsync(BEST_FIXED_TRANSFER.propose({ env: 'alfworld', target: 'sim/qwen-3b', packet: extractPacket([]), trainRecords: [], trainEpisodes: [], seed: 0, cluster: rt.cluster, cache: null, envOptions: {}, options: { engineer: eng, editor: { k: 1, select: 'first' } } }), { code: 'EXP_METHOD_FAILED', message: /best-fixed-transfer: no splits\.json with a target for alfworld/ } as never);
  // in exp main: one unit for every packet, its row in the table
  const r = await runExpMain({ ...SMALL, envs: ['alfworld'], methods: ['vanilla', 'best-fixed-patch'], engineer: eng, out: join(root, 'fixed') }, { ...quiet, cluster: rt.cluster });
  const fixedRows = r.rows.filter((x) => x.method === 'best-fixed-patch');
  t.is(fixedRows.length, 1);
  t.is(fixedRows[0]!.packet, null);
  t.regex(r.report.markdown, /\| best fixed patch \| \d+\.\d \[/);
  // the dashboard's progress counts it as one unit per env, not one per packet
  t.deepEqual(runInfo(join(root, 'fixed')).progress, { done: 2, total: 2 });
  t.is(methodAvailable(BEST_FIXED_PATCH, { editor: { k: 1, select: 'first' } }), BEST_FIXED_MISSING);
});

test('hr1 report - regenerates the same report and plots from stored results only (no cache, no cluster)', async (t) => {
  const dir = join(root, 'regen');
  await runExpMain({ ...SMALL, out: dir }, { ...quiet, cluster: rt.cluster });
  const before = Object.fromEntries([RUN_FILES.report, RUN_FILES.csv, ...readdirSync(join(dir, 'plots')).map((f) => `plots/${f}`)].map((f) => [f, readFileSync(join(dir, f))]));
  rmSync(join(dir, RUN_FILES.cache), { force: true });
  for (const f of Object.keys(before)) rmSync(join(dir, f));
  let printed = '';
  const r = await runReport(dir, { stdout: (s) => (printed = s) });
  for (const [f, bytes] of Object.entries(before)) t.true(readFileSync(join(dir, f)).equals(bytes), f);
  t.false(existsSync(join(dir, RUN_FILES.cache)), 'no episode was played');
  t.regex(printed, /SIMULATED target/);
  t.is(r.kind === 'exp' ? r.rows.length : -1, 15);
  await t.throwsAsync(runReport(join(root, 'nope')), { code: 'EXP_RUN_DIR' } as never);
});

test.serial('methods - a registered engineer fills its row', async (t) => {
  registerMethod({ name: 'engineer-grpo', label: 'engineer, SFT+GRPO', kind: 'engineer', propose: async (ctx) => (ctx.packet.episodes.length > 0 ? BASELINES.react : null) });
  try {
    const r = await runExpMain({ ...SMALL, envs: ['dbbench'], out: join(root, 'reg') }, { ...quiet, cluster: rt.cluster });
    const md = r.report.markdown;
    t.regex(md, /\| engineer, SFT\+GRPO \| \d+\.\d \[/);
    t.true(md.includes(`| engineer, SFT only | ${ENGINEER_MISSING} |`));
    t.is(r.rows.filter((x) => x.method === 'engineer-grpo').length, 2);
    // Harness-R1 against its controls: the ones that ran (the best fixed patch and SFT-only need a trained engineer), paired
    t.regex(md, /## Harness-R1 against its controls/);
    t.regex(md, /\| engineer, SFT\+GRPO − prompted editor \(teacher\) \| [+-]\d+\.\d \[/);
    const summary = JSON.parse(read(join(root, 'reg'), RUN_FILES.summary)) as { versus: { control: string; average: { mean: number } | null }[]; averages: { method: string; delta: { mean: number } | null }[] };
    t.deepEqual(summary.versus.map((v) => v.control), ['prompted-editor', 'vanilla']);
    const vsVanilla = summary.versus.find((v) => v.control === 'vanilla')!.average!.mean;
    t.true(Math.abs(vsVanilla - summary.averages.find((a) => a.method === 'engineer-grpo')!.delta!.mean) < 1e-6, 'the difference against vanilla is the Δ vs vanilla (summary.json rounds to 6 decimals)');
  } finally {
    resetMethods();
  }
});

test.serial('methods - a decoding variant of the engineer (best of K) is compared with the control and the greedy engineer, paired', async (t) => {
  registerMethod({ name: 'engineer-grpo', label: 'engineer, SFT+GRPO', kind: 'engineer', propose: async () => BASELINES.react });
  registerMethod({ name: 'engineer-grpo-best-of-k', label: 'engineer, best of K', kind: 'engineer', propose: async (ctx) => (ctx.packet.episodes.length > 0 ? BASELINES.selfRefine : null) });
  try {
    const r = await runExpMain({ ...SMALL, envs: ['dbbench'], methods: ['vanilla', 'engineer-grpo', 'engineer-grpo-best-of-k'], out: join(root, 'variant') }, { ...quiet, cluster: rt.cluster });
    const summary = JSON.parse(read(join(root, 'variant'), RUN_FILES.summary)) as { versus: { method: string; control: string; average: { mean: number } | null }[]; averages: { method: string; delta: { mean: number } | null }[] };
    t.deepEqual(summary.versus.map((v) => `${v.method}:${v.control}`), ['engineer-grpo:vanilla', 'engineer-grpo-best-of-k:engineer-grpo']);
    const d = (m: string) => summary.averages.find((a) => a.method === m)!.delta!.mean;
    // paired on the same episodes: the mean difference is the difference of the Δs vs vanilla
    t.true(Math.abs(summary.versus[1]!.average!.mean - (d('engineer-grpo-best-of-k') - d('engineer-grpo'))) < 2e-6, 'summary.json rounds each Δ to 6 decimals');
    t.regex(r.report.markdown, /\| engineer, best of K − engineer, SFT\+GRPO \| [+-]\d+\.\d \[/);
  } finally {
    resetMethods();
  }
});

test.serial('methods - an invalid patch is scored unpatched and counted: the valid-patch rate, hint tokens per decision in the table', async (t) => {
  // a hostile or broken method: every second packet gets a patch the schema refuses
  registerMethod({ name: 'engineer-grpo', label: 'engineer, SFT+GRPO', kind: 'engineer', propose: async (ctx) => (ctx.seed % 2 === 0 ? { rules: [{ hook: 'nowhere', when: {}, effect: {} }] } : BASELINES.react) });
  try {
    const r = await runExpMain({ ...SMALL, envs: ['dbbench'], methods: ['vanilla', 'react', 'engineer-grpo'], out: join(root, 'invalid') }, { ...quiet, cluster: rt.cluster });
    const rows = r.rows.filter((x) => x.method === 'engineer-grpo');
    t.is(rows.length, 2);
    const bad = rows.filter((x) => x.invalid !== undefined);
    t.is(bad.length, 1);
    t.regex(bad[0]!.invalid!, /not a valid patch; fix these fields/);
    t.is(bad[0]!.patchHash, '', 'ran unpatched');
    // unpatched means exactly vanilla's outcomes on the same episodes
    const vanilla = r.rows.find((x) => x.method === 'vanilla')!;
    t.deepEqual(bad[0]!.outcomes.map((o) => o.slice(0, 4)), vanilla.outcomes.map((o) => o.slice(0, 4)));
    t.regex(r.report.markdown, /\| engineer, SFT\+GRPO \|.*\| 50 % \|/);
    t.regex(r.report.markdown, /\| ReAct \|.*\| 100 % \|/);
    // every episode carries its hint tokens per decision; vanilla adds none
    t.true(r.rows.every((x) => x.outcomes.every((o) => typeof o[5] === 'number' && o[5] >= 0)));
    t.true(vanilla.outcomes.every((o) => o[5] === 0));
    const s = JSON.parse(read(join(root, 'invalid'), RUN_FILES.summary));
    t.is(s.groups.find((g: { method: string }) => g.method === 'engineer-grpo').validPatchRate, 0.5);
    t.is(s.groups.find((g: { method: string }) => g.method === 'vanilla').hintTokensPerDecision, 0);
  } finally {
    resetMethods();
  }
});

test('exp sweep, crosstask, ablate, coevolve - small runs write their tables and plots', async (t) => {
  const tiny = { inProcess: true, progress: 'silent' as const, envs: ['dbbench' as const, 'webshop' as const], test: { tasks: 8, seeds: [0] }, train: { packets: 1, batchSize: 10 } };
  const c = { ...quiet, cluster: rt.cluster };
  const s = await runExpSweep({ ...tiny, out: join(root, 'sw'), targets: ['sim/qwen-3b', 'sim/llama-1.5b'] }, c);
  t.regex(s.report.text, /positive cells: \d+ of 4/);
  t.true(existsSync(join(root, 'sw/plots/sweep-heatmap.png')));
  // two sweeps on the same episodes, compared cell by cell: A − B is A's gain minus B's (the same vanilla rows), a sweep against itself is 0
  const s2 = await runExpSweep({ ...tiny, out: join(root, 'sw-react'), targets: ['sim/qwen-3b', 'sim/llama-1.5b'], method: 'react' }, c);
  t.is(s2.meta.methods[0]!.name, 'react');
  const { compareSweeps, formatComparison } = await import('../../../experiments/exp/compare.ts');
  const cmp = compareSweeps(join(root, 'sw'), join(root, 'sw-react'));
  t.is(cmp.cells.length, 4);
  for (const x of cmp.cells) t.true(Math.abs(x.diff.mean - (x.a!.mean - x.b!.mean)) < 1e-9, `${x.target} ${x.env}`);
  t.regex(formatComparison(cmp), /prompted-editor above react in \d+ of 4 cells/);
  const self = compareSweeps(join(root, 'sw'), join(root, 'sw'));
  t.true(self.cells.every((x) => x.diff.mean === 0 && x.diff.lo === 0 && x.diff.hi === 0));
  t.is(self.mean!.mean, 0);
  t.throws(() => compareSweeps(join(root, 'sw'), join(root, 'nope')), { message: /is not a run folder \(no run\.json\)/ });
  const x = await runExpCrosstask({ ...tiny, out: join(root, 'ct'), seeds: [0, 1], failures: 5, methods: ['prompted-editor', 'engineer-grpo'] }, c);
  t.regex(x.report.markdown, /\| prompted editor \(teacher\) \| [+-]\d+\.\d ± \d+\.\d/);
  t.true(x.report.markdown.includes(ENGINEER_MISSING));
  // its failures come from episodes checked apart from every engineer's: an engineer trained on one of them is refused
  t.throws(() => compareSweeps(join(root, 'sw'), join(root, 'ct')), { message: /holds an exp crosstask run; compare takes two exp sweep run folders/ });
  const cand = x.meta.disjoint!.sets.find((z) => z.name === 'crosstask failures (candidates)' && z.env === 'webshop')!;
  t.deepEqual(cand.seeds, [950_000, 950_001]);
  t.false(x.meta.disjoint!.sets.some((z) => z.name === 'evaluation packets'), 'crosstask has no train batches to list');
  const leak = join(root, 'ct-leaky-engineer');
  mkdirSync(join(leak, 'webshop'), { recursive: true });
  const { listTasks } = await import('../../../envs/registry.ts');
  writeFileSync(join(leak, 'webshop', TRAIN_SPLITS_FILE), JSON.stringify({ kind: 'hr1-train-splits/1', envs: { webshop: { target: 'sim/qwen-3b', split: 'train', sft: [{ taskId: listTasks('webshop', 'train')[3], seed: 950_001 }], verify: [], grpo: [] } } }));
  await t.throwsAsync(runExpCrosstask({ ...tiny, envs: ['webshop'], engineer: leak, out: join(root, 'ct-leak'), seeds: [0, 1], failures: 5, methods: ['engineer-grpo'] }, c), { instanceOf: SplitOverlapError, message: /webshop: the crosstask failures \(candidates\) and engineer SFT episodes share 1 \(task, seed\) pair/ });
  const a = await runExpAblate({ ...tiny, out: join(root, 'ab') }, c);
  t.is(a.rows.filter((r) => r.variant.startsWith('-')).length, 2 * 4);
  t.regex(a.report.markdown, /drop without preAction/);
  const v = await runExpCoevolve({ ...tiny, out: join(root, 'co') }, c);
  t.deepEqual(v.meta.targets, ['sim/qwen-3b', 'sim/qwen-8b']);
  t.deepEqual(v.meta.simulated, ['sim/qwen-3b', 'sim/qwen-8b']);
  t.regex(v.report.markdown, /sim\/qwen-8b \+ patches from sim\/qwen-8b \(re-trained\)/);
  await t.throwsAsync(runExpAblate({ ...tiny, out: join(root, 'ab2'), method: 'engineer-sft' }, c), { message: /ablate|method: engineer-sft is not available/ });
});

test('ablate - withoutHook drops the hook\'s rules and code, and skills with init', (t) => {
  const p = { skills: ['s'], rules: [{ hook: 'preAction', when: { pred: 'proposedRepeatsLast' }, effect: { type: 'block_and_prompt', message: 'no' } }, { hook: 'preDecision', effect: { type: 'hint', message: 'h' } }] };
  t.deepEqual(withoutHook(p, 'preAction'), { patch: { skills: ['s'], rules: [p.rules[1]] }, removed: 1 });
  t.deepEqual(withoutHook(p, 'init'), { patch: { rules: p.rules }, removed: 1 });
  t.is(withoutHook({ skills: ['s'] }, 'init').patch, null);
  t.is(withoutHook(p, 'postFeedback').removed, 0);
});

test('splits - an experiment may give an env other train and test splits: ALFWorld\'s valid_seen halves; packets, tests and run.json follow; overlapping or unknown splits are refused', async (t) => {
  const { listTasks } = await import('../../../envs/registry.ts');
  const { testTasks, trainBatches } = await import('../../../experiments/runner/evaluate.ts');
  const { splitsMeta } = await import('../../../experiments/exp/common.ts');
  const seen = listTasks('alfworld', 'valid_seen');
  const dev = listTasks('alfworld', 'seen_dev');
  const tst = listTasks('alfworld', 'seen_test');
  t.is(dev.length + tst.length, seen.length);
  t.deepEqual([...dev, ...tst].sort(), [...seen].sort(), 'the halves partition valid_seen');
  t.true(Math.abs(dev.length - tst.length) <= 1);
  const roles = { train: 'seen_dev', test: ['seen_test'] };
  const o = resolveExpMain({ ...SMALL, envs: ['alfworld', 'webshop'], splits: { alfworld: roles } });
  const devSet = new Set(dev);
  const tstSet = new Set(tst);
  t.true(testTasks('alfworld', 10, 0, {}, o.splits?.alfworld).every((x) => tstSet.has(x)));
  t.true(trainBatches('alfworld', { packets: 2, batchSize: 12, seed: 0, roles: o.splits?.alfworld }).flat().every((e) => devSet.has(e.taskId)));
  const meta = splitsMeta(o);
  t.deepEqual([meta.alfworld!.train, meta.alfworld!.test], ['seen_dev', ['seen_test']]);
  t.is(meta.webshop!.train, 'train', 'an env without an override keeps its own splits');
  t.throws(() => resolveExpMain({ ...SMALL, splits: { alfworld: { train: 'valid_seen', test: ['seen_test'] } } }), { message: /share 70 tasks.*disjoint/ });
  t.throws(() => resolveExpMain({ ...SMALL, splits: { alfworld: { train: 'nope', test: ['seen_test'] } } }), { message: /alfworld has no split "nope"/ });
  t.throws(() => resolveExpMain({ ...SMALL, splits: { mars: { train: 'a', test: ['b'] } } }), { message: /must be one of/ });
});
