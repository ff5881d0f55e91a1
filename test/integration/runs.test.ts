import test from 'ava';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { init } from '../../cluster/init.ts';
import { RUN_FILES, runExpMain, runReport, type EvalRow } from '../../experiments/exp/index.ts';
import { fmtDelta, fmtPct, METHOD_COLOURS, methodColour, SCALAR_COLUMNS, type RunSummary } from '../../experiments/report/index.ts';
import { firstDivergence, listEpisodes, listRuns, parseEpisodeFilter, readEpisode, readRun, RunsError, type EpisodeRef } from '../../experiments/runs/index.ts';
import { resolveTrainConfig, trainEngineer, type IterationLog } from '../../experiments/train.ts';
import { legendItems, legendProblems } from '../fixtures/svg-legend.ts';
import { hr1 } from './processes.ts';

// one small exp main run (two envs, SIMULATED target) and one tiny train run, shared by every test
const root = mkdtempSync(join(tmpdir(), 'hr1-runs-'));
const runsDir = join(root, 'runs');
const expDir = join(runsDir, 'main-small');
const trainDir = join(runsDir, 'train-small');
const read = (d: string, f: string) => readFileSync(join(d, f), 'utf8');
const jsonl = <T>(d: string, f: string) => read(d, f).trim().split('\n').map((l) => JSON.parse(l) as T);

/** RFC 4180 rows (quoted cells may hold commas, quotes and newlines). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(cell), (cell = '');
    else if (c === '\n') row.push(cell), rows.push(row), (row = []), (cell = '');
    else cell += c;
  }
  if (cell || row.length) row.push(cell), rows.push(row);
  return rows;
}

test.before(async () => {
  mkdirSync(runsDir, { recursive: true });
  // a folder that is no run: listRuns leaves it out
  mkdirSync(join(runsDir, 'notes'));
  writeFileSync(join(runsDir, 'notes', 'todo.txt'), 'x');
  const rt = await init({ inProcess: true });
  try {
    await runExpMain({ inProcess: true, progress: 'silent', envs: ['alfworld', 'webshop'], test: { tasks: 6, seeds: [0, 1] }, train: { packets: 1, batchSize: 10 }, out: expDir }, { cluster: rt.cluster, stdout: () => {} });
    const cfg = resolveTrainConfig(undefined, { model: { dModel: 64, nLayers: 1, nHeads: 2, maxLen: 768 }, env: 'alfworld', target: 'sim/llama-3b', batchSize: 8, sft: { batches: 2, k: 2, epochs: 3, batchSize: 8 }, grpo: { iterations: 2, k: 2 }, out: trainDir });
    await trainEngineer(rt.cluster, cfg, () => {});
  } finally {
    await rt.shutdown();
  }
});
test.after.always(() => rmSync(root, { recursive: true, force: true }));

test('runs - listRuns finds the exp and the train run folder with their kind, targets and progress; other folders are left out', (t) => {
  const runs = listRuns(runsDir);
  t.deepEqual(runs.map((r) => r.name).sort(), ['main-small', 'train-small']);
  const exp = runs.find((r) => r.kind === 'exp')!;
  t.is(exp.exp, 'main');
  t.deepEqual(exp.envs, ['alfworld', 'webshop']);
  t.deepEqual(exp.targets, ['sim/qwen-3b']);
  t.true(exp.methods.includes('prompted-editor'));
  // 2 envs × (3 fixed baselines + 1 editor packet); the engineers are unavailable
  t.deepEqual(exp.progress, { done: 8, total: 8 });
  t.true(exp.finished);
  const train = runs.find((r) => r.kind === 'train')!;
  t.deepEqual(train.targets, ['sim/llama-3b']);
  t.deepEqual(train.progress, { done: 5, total: 5 });
  t.true(train.finished && train.mtime > 0);
  t.deepEqual(listRuns(join(root, 'nothing-here')), []);

  const detail = readRun(expDir);
  t.is((detail.summary as RunSummary).kind, 'hr1-summary/1');
  t.true(detail.plots.includes('main-primary.svg') && detail.plots.includes('main-task-types.png'));
  const td = readRun(trainDir);
  t.deepEqual(td.plots, ['training.png', 'training.svg']);
  t.is((td.summary as { grpo: { iterations: number } }).grpo.iterations, 2);
  t.throws(() => readRun(join(runsDir, 'notes')), { instanceOf: RunsError, message: /is not a run folder .*pass a folder that hr1 exp or hr1 train wrote/ });
});

test('runs - listEpisodes gives one reference per outcome of results.jsonl, and filters them', (t) => {
  const rows = jsonl<EvalRow>(expDir, RUN_FILES.results);
  const all = listEpisodes(expDir);
  t.is(all.length, rows.reduce((n, r) => n + r.outcomes.length, 0));
  for (const r of rows) t.is(listEpisodes(expDir, { env: r.env, method: r.method }).length, r.outcomes.length, `${r.env} ${r.method}`);
  const lost = listEpisodes(expDir, { method: 'vanilla', won: false });
  t.is(lost.length, rows.filter((r) => r.method === 'vanilla').flatMap((r) => r.outcomes).filter((o) => o[2] === 0).length);
  t.true(lost.every((e) => e.method === 'vanilla' && !e.won && e.patchHash === ''));
  const one = all[0]!;
  t.deepEqual(listEpisodes(expDir, { taskId: one.taskId, seed: one.seed, method: one.method, env: one.env }), [one]);
  t.deepEqual(parseEpisodeFilter(['method=prompted-editor', 'won=false', 'seed=1', 'packet=none']), { method: 'prompted-editor', won: false, seed: 1, packet: null });
});

/** The divergence index agrees with the steps: equal before it, different at it (or one ended). */
function checkDivergence(t: { true: (v: boolean, m?: string) => void; is: (a: unknown, b: unknown, m?: string) => void }, a: { steps: { action: string; observation: string }[] }, b: { steps: { action: string; observation: string }[] }, d: number | null, what: string): void {
  const n = d ?? Math.max(a.steps.length, b.steps.length);
  for (let i = 0; i < Math.min(n, a.steps.length, b.steps.length); i++) t.true(a.steps[i]!.action === b.steps[i]!.action && a.steps[i]!.observation === b.steps[i]!.observation, `${what}: step ${i} before the divergence`);
  if (d === null) t.is(a.steps.length, b.steps.length, `${what}: identical`);
  else if (d < a.steps.length && d < b.steps.length) t.true(a.steps[d]!.action !== b.steps[d]!.action || a.steps[d]!.observation !== b.steps[d]!.observation, `${what}: step ${d} differs`);
  else t.true(a.steps.length !== b.steps.length && d === Math.min(a.steps.length, b.steps.length), `${what}: one ended at ${d}`);
}

test('runs - readEpisode returns the record, its patch and the vanilla counterpart, with a divergence index the steps agree with', (t) => {
  const rows = jsonl<EvalRow>(expDir, RUN_FILES.results);
  const editor = listEpisodes(expDir, { method: 'prompted-editor' });
  t.true(editor.length > 0);
  let parted = 0;
  for (const ref of editor) {
    const v = readEpisode(expDir, ref);
    t.is(v.record.taskId, ref.taskId);
    t.is(v.record.seed, ref.seed);
    t.is(v.record.outcome.won, ref.won);
    t.deepEqual(v.patch, rows.find((r) => r.env === ref.env && r.method === 'prompted-editor')!.patch as never);
    t.truthy(v.vanilla, `${ref.taskId} seed ${ref.seed}: its vanilla episode`);
    // the vanilla row's outcome of the same episode is the counterpart's
    const vo = rows.find((r) => r.env === ref.env && r.method === 'vanilla')!.outcomes.find((o) => o[0] === ref.taskId && o[1] === ref.seed)!;
    t.is(v.vanilla!.outcome.won, vo[2] === 1);
    t.is(v.divergence, firstDivergence(v.record, v.vanilla!));
    checkDivergence(t, v.record, v.vanilla!, v.divergence, `${ref.env} ${ref.taskId} seed ${ref.seed}`);
    if (v.divergence !== null) parted++;
  }
  t.true(parted > 0, 'the editor changes some episodes');
  const van = readEpisode(expDir, listEpisodes(expDir, { method: 'vanilla' })[0]!);
  t.is(van.patch, null);
  t.is(van.divergence, null);
  const missing: EpisodeRef = { ...editor[0]!, taskId: 'no/such/task' };
  t.throws(() => readEpisode(expDir, missing), { instanceOf: RunsError, message: /holds no record/ });
});

test('runs - a train run: vanilla and patch:<hash8> episodes from episodes.sqlite, each patched one paired with its unpatched one', (t) => {
  const all = listEpisodes(trainDir);
  t.true(all.length > 0);
  t.true(all.some((e) => e.method === 'vanilla'));
  const patched = all.filter((e) => e.method !== 'vanilla');
  t.true(patched.length > 0);
  for (const e of patched) t.is(e.method, `patch:${e.patchHash.slice(0, 8)}`);
  t.true(all.every((e) => e.target === 'sim/llama-3b' && e.env === 'alfworld'));
  const sftHashes = new Set(jsonl<{ patchHash: string }>(trainDir, 'sft.jsonl').map((r) => r.patchHash));
  // GRPO's candidates are logged with their patches: every iteration's group, valid ones with a canonical patch
  const cands = jsonl<{ iteration: number; index: number; valid: boolean; patchHash: string; patch: unknown; delta: number }>(trainDir, 'candidates.jsonl');
  const grpoIts = jsonl<{ phase: string; iteration: number }>(trainDir, 'iterations.jsonl').filter((x) => x.phase === 'grpo').map((x) => x.iteration);
  t.deepEqual([...new Set(cands.map((c) => c.iteration))].sort(), [...new Set(grpoIts)].sort());
  t.true(cands.filter((c) => c.valid).every((c) => c.patch !== null && c.patchHash.length === 64));
  const candHashes = new Set(cands.filter((c) => c.valid).map((c) => c.patchHash));
  let grpoSeen = 0;
  for (const e of [...patched.filter((x) => candHashes.has(x.patchHash)).slice(0, 10), ...patched.slice(0, 10)]) {
    const v = readEpisode(trainDir, e);
    t.truthy(v.vanilla);
    checkDivergence(t, v.record, v.vanilla!, v.divergence, e.method);
    // the patch is known when SFT kept it or GRPO sampled it
    if (sftHashes.has(e.patchHash) || candHashes.has(e.patchHash)) t.truthy(v.patch, e.method);
    if (candHashes.has(e.patchHash)) grpoSeen++;
  }
  t.true(grpoSeen > 0, 'a GRPO candidate\'s episodes are read with their patch');
});

test('hr1 episodes export - a real process writes JSONL that parses and matches the filter (file and stdout)', async (t) => {
  const out = join(root, 'editor-lost.jsonl');
  const p = hr1(['episodes', 'export', expDir, '--filter', 'method=prompted-editor', '--filter', 'env=alfworld', '--out', out]);
  t.is(await p.exited, 0, p.out());
  const lines = read(root, 'editor-lost.jsonl').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.is(lines.length, listEpisodes(expDir, { method: 'prompted-editor', env: 'alfworld' }).length);
  for (const l of lines) {
    t.is(l.method, 'prompted-editor');
    t.is(l.env, 'alfworld');
    t.true(Array.isArray(l.steps) && (l.steps as unknown[]).length > 0);
    t.is((l.outcome as { won: boolean }).won, l.won as boolean);
  }
  t.regex(p.out(), new RegExp(`${lines.length} episodes to`));
  const q = hr1(['episodes', 'export', trainDir, '--filter', 'method=vanilla', '--filter', 'won=false']);
  t.is(await q.exited, 0, q.out());
  const got = q.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { method: string; won: boolean });
  t.is(got.length, listEpisodes(trainDir, { method: 'vanilla', won: false }).length);
  t.true(got.every((g) => g.method === 'vanilla' && g.won === false));
});

test('hr1 episodes export - a bad filter, a bad format or a folder that is no run: a clear error naming the fix, exit ≠ 0, no stack', async (t) => {
  const cases: [string[], RegExp][] = [
    [['episodes', 'export', expDir, '--filter', 'colour=red'], /RUNS_BAD_FILTER.*unknown key "colour"; use one of env, target, method, taskId, seed, won/],
    [['episodes', 'export', expDir, '--filter', 'seed=abc'], /RUNS_BAD_FILTER.*seed must be an integer/],
    [['episodes', 'export', expDir, '--filter', 'won'], /is not key=value; write e\.g\. --filter method=vanilla/],
    [['episodes', 'export', expDir, '--format', 'parquet'], /RUNS_BAD_FORMAT.*write --format jsonl/],
    [['episodes', 'export', join(runsDir, 'notes')], /RUNS_NOT_A_RUN.*is not a run folder.*hr1 exp or hr1 train/],
  ];
  for (const [args, re] of cases) {
    const p = hr1(args);
    t.not(await p.exited, 0, args.join(' '));
    t.regex(p.out(), re);
    t.notRegex(p.out(), /\n\s+at /, 'no stack trace');
  }
});

test('scalars.csv - train: a header and every scalar of every iteration; exp: per unit, per method and the average', (t) => {
  const tr = parseCsv(read(trainDir, 'scalars.csv'));
  t.deepEqual(tr[0], [...SCALAR_COLUMNS]);
  const its = jsonl<IterationLog>(trainDir, 'iterations.jsonl');
  const col = (name: string) => SCALAR_COLUMNS.indexOf(name as never);
  for (const it of its) {
    const mine = tr.slice(1).filter((r) => r[col('scope')] === it.phase && r[col('iteration_or_unit')] === String(it.iteration));
    t.true(mine.length > 0, `${it.phase} ${it.iteration}`);
    const byName = Object.fromEntries(mine.map((r) => [r[col('name')], Number(r[col('value')])]));
    if (it.loss !== undefined) t.is(byName.loss, it.loss);
    if (it.meanDelta !== undefined) t.is(byName.mean_delta, it.meanDelta);
    t.is(byName.ms_total, it.ms.total);
  }
  t.true(tr.slice(1).every((r) => r.length === SCALAR_COLUMNS.length && Number.isFinite(Number(r[col('value')]))));

  const ex = parseCsv(read(expDir, RUN_FILES.scalars));
  t.deepEqual(ex[0], [...SCALAR_COLUMNS]);
  const rows = jsonl<EvalRow>(expDir, RUN_FILES.results);
  rows.forEach((r, i) => {
    const success = ex.find((x) => x[col('scope')] === 'unit' && x[col('iteration_or_unit')] === String(i) && x[col('name')] === 'success')!;
    t.is(success[col('method')], r.method);
    t.true(Math.abs(Number(success[col('value')]) - r.outcomes.reduce((s, o) => s + o[2], 0) / r.outcomes.length) < 1e-9);
  });
  t.true(ex.some((x) => x[col('scope')] === 'method' && x[col('method')] === 'prompted-editor' && x[col('name')] === 'delta_success'));
  t.true(ex.some((x) => x[col('scope')] === 'average' && x[col('name')] === 'average'));
});

test('summary.json - the report\'s tables as numbers: they match results.jsonl and report.md', (t) => {
  const s = JSON.parse(read(expDir, RUN_FILES.summary)) as RunSummary;
  const rows = jsonl<EvalRow>(expDir, RUN_FILES.results);
  const md = read(expDir, RUN_FILES.report);
  t.is(s.groups.length, rows.length); // one packet: one row per group
  // the run's splits and the sets checked apart travel with the tables
  const meta = JSON.parse(read(expDir, RUN_FILES.meta));
  t.deepEqual(s.splits, meta.splits);
  t.deepEqual(s.disjoint, meta.disjoint);
  t.true(s.disjoint!.sets.some((x) => x.name === 'test'));
  for (const g of s.groups) {
    const own = rows.filter((r) => r.env === g.env && r.method === g.method);
    const outs = own.flatMap((r) => r.outcomes);
    t.is(g.episodes, outs.length);
    t.true(Math.abs(g.success!.mean - outs.reduce((a, o) => a + o[2], 0) / outs.length) < 1e-6, `${g.env} ${g.method} success`);
    t.true(Math.abs(g.score!.mean - outs.reduce((a, o) => a + o[3], 0) / outs.length) < 1e-6, `${g.env} ${g.method} score`);
    t.true(g.success!.lo <= g.success!.mean && g.success!.mean <= g.success!.hi);
    // the report's cells are these numbers
    const title = g.env === 'alfworld' ? 'ALFWorld' : 'WebShop';
    const line = md.split('\n').find((l) => l.startsWith(`| ${g.label} | `))!;
    for (const metric of g.metrics) t.true(line.includes(fmtPct(g[metric])), `${g.label} ${title} ${metric}: ${fmtPct(g[metric])} in ${line}`);
    if (g.method !== 'vanilla') {
      const dline = md.split('\n').filter((l) => l.startsWith(`| ${g.label} | `))[1]!;
      t.true(dline.includes(fmtDelta(g.delta.success)), `${g.label} Δ ${fmtDelta(g.delta.success)} in ${dline}`);
    } else t.is(g.delta.success, null);
  }
  const avg = s.averages.find((a) => a.method === 'prompted-editor')!;
  t.true(md.includes(fmtPct(avg.value)));
  t.true(md.includes(fmtDelta(avg.delta)));
});

test('plots - one colour per method in every chart, no legend label cut, WebShop success plotted, titles name the target', (t) => {
  const svg = (f: string) => read(expDir, `plots/${f}.svg`);
  const labels = { vanilla: 'vanilla', react: 'ReAct', 'self-refine': 'Self-Refine', 'prompted-editor': 'prompted editor (teacher)' } as const;
  const colours = (f: string) => Object.fromEntries(legendItems(svg(f)).map((it) => [it.label, it.colour]));
  const primary = colours('main-primary');
  const delta = colours('main-delta');
  for (const [name, label] of Object.entries(labels)) {
    t.is(primary[label], methodColour(name), `${label} in main-primary`);
    if (name !== 'vanilla') t.is(delta[label], primary[label], `${label}: the same colour without vanilla in the chart`);
  }
  t.is(primary.vanilla, METHOD_COLOURS.vanilla);
  t.is(colours('main-task-types')['prompted editor (teacher)'], primary['prompted editor (teacher)']);
  for (const f of ['main-primary', 'main-delta', 'main-interventions', 'main-task-types']) {
    const want = f === 'main-delta' ? Object.values(labels).slice(1) : Object.values(labels);
    t.deepEqual(legendProblems(svg(f), want), [], f);
    t.regex(svg(f), /sim\/qwen-3b \(SIMULATED\)/, `${f} names its target`);
  }
  // the per-packet spread: the packet-reading method only, in its colour, with every packet a dot
  t.is(colours('main-packets')['prompted editor (teacher)'], primary['prompted editor (teacher)']);
  t.deepEqual(legendProblems(svg('main-packets'), ['prompted editor (teacher)']), []);
  t.regex(svg('main-packets'), /spread across packets: sim\/qwen-3b \(SIMULATED\)/);
  t.regex(read(expDir, 'report.md'), /plots\/main-packets\.svg/);
  t.regex(svg('main-primary'), />WebShop success</);
  t.regex(svg('main-primary'), />WebShop score</);
  const training = read(trainDir, 'plots/training.svg');
  t.regex(training, /alfworld on sim\/llama-3b \(SIMULATED\)/);
  t.deepEqual(legendProblems(training, ['SFT loss', 'mean Δ', 'best Δ', 'valid rate', 'entropy', 'clip fraction', 'KL', 'GRPO loss', 'rollout s', 'update s']), []);
});

test('hr1 report - a train run folder gets its training plot and scalars.csv again, from iterations.jsonl alone', async (t) => {
  const before = { svg: read(trainDir, 'plots/training.svg'), csv: read(trainDir, 'scalars.csv') };
  rmSync(join(trainDir, 'plots'), { recursive: true });
  rmSync(join(trainDir, 'scalars.csv'));
  const r = await runReport(trainDir, { stdout: () => {} });
  t.is(r.kind, 'train');
  t.is(read(trainDir, 'plots/training.svg'), before.svg);
  t.is(read(trainDir, 'scalars.csv'), before.csv);
  t.true(existsSync(join(trainDir, 'plots/training.png')));
});
