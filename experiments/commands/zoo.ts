/** `hr1 zoo build`, `hr1 zoo list` and `hr1 zoo table`. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { table } from './table.ts';

const log = (l: string) => process.stderr.write(`${l}\n`);

/**
 * A user's zoo file for this command and everything it starts (actors, child processes): checked
 * now (LM_BAD_CONFIG naming the entry and field), then named by HR1_ZOO_CONFIG. Its entry names.
 */
export async function useZooConfig(file: string | undefined): Promise<string[] | undefined> {
  if (!file) return undefined;
  const lm = await import('../../policies/targets/lm/index.ts');
  const entries = lm.loadZooConfig(resolve(file), lm.ZOO);
  process.env[lm.ZOO_CONFIG_ENV] = resolve(file);
  return entries.map((e) => e.name);
}

export interface ZooBuildOptions {
  /** a user's zoo file (its entries join the zoo; without --only, they are what is built) */
  config?: string | undefined;
  only?: string[] | undefined;
  tiny?: boolean | undefined;
  force?: boolean | undefined;
  /** @default the CPU count, at most 4 */
  jobs?: number | undefined;
}

export async function zooBuild(o: ZooBuildOptions): Promise<void> {
  const mine = await useZooConfig(o.config);
  const lm = await import('../../policies/targets/lm/index.ts');
  const jobs = o.jobs ?? Math.min(4, availableParallelism());
  const only = o.only ?? mine;
  const r = await lm.buildZoo({ ...(only ? { only } : {}), tiny: !!o.tiny, force: !!o.force, jobs, progress: true, log });
  console.log(`${r.length} target(s) built or cached`);
}

export interface ZooListOptions {
  config?: string | undefined;
  json?: boolean | undefined;
}

/** `hr1 zoo list`: every known target (built-in and the user's), built or not. */
export async function zooList(o: ZooListOptions): Promise<void> {
  const mine = new Set(await useZooConfig(o.config));
  const lm = await import('../../policies/targets/lm/index.ts');
  const { vendoredState } = await import('../../policies/targets/lm/vendor.ts');
  // each entry, and its @tiny build where that is built or vendored
  const ids = lm.knownZoo().flatMap((z) => {
    const t = lm.resolveConfig(`${z.name}@tiny`);
    return [z.name, ...(lm.readMeta(t) || vendoredState(t) !== 'no' ? [t.id] : [])];
  });
  const rows = ids.map((id) => {
    const c = lm.resolveConfig(id);
    const dir = lm.modelDir(c);
    const onnx = join(dir, 'model.onnx');
    const built = !lm.readMeta(c) || !existsSync(onnx) ? 'no' : lm.staleBuild(c) ? 'stale' : 'yes';
    // a vendored copy (policies/targets/lm/vendor.ts) plays when the model is not built: yes, stale (another config hash), bad hash, no
    const vendored = vendoredState(c);
    return { name: id, target: `lm/${id}`, vendored, plays: built !== 'no' ? 'build' : vendored === 'yes' ? 'vendored' : null, envs: c.envs, dModel: c.dModel, nLayers: c.nLayers, nHeads: c.nHeads, dFf: c.dFf, maxLen: c.maxLen, episodes: c.episodes, steps: c.steps, seed: c.seed, base: c.base?.name ?? null, hash: c.hash, built, source: mine.has(c.name) ? 'config' : 'built-in', dir, note: c.note };
  });
  if (o.json) {
    console.log(JSON.stringify(rows));
    return;
  }
  console.log(table(['target', 'envs', 'd × layers', 'ctx', 'episodes', 'steps', 'seed', 'base', 'built', 'vendored', 'source', 'note'], rows.map((r) => [r.target, r.envs.join(','), `${r.dModel} × ${r.nLayers}`, r.maxLen, r.episodes, r.steps, r.seed, r.base ?? '', r.built, r.vendored, r.source, r.note])));
  console.log(`\n${rows.length} targets, ${rows.filter((r) => r.built === 'yes').length} built (${lm.zooDir()}), ${rows.filter((r) => r.built === 'no' && r.vendored === 'yes').length} more vendored; build with \`hr1 zoo build --only NAME\`${o.config ? ` --config ${o.config}` : ''}`);
}

export interface ZooTableOptions {
  config?: string | undefined;
  /** tasks per env (default: the whole evaluation split) */
  tasks?: number | undefined;
  seeds?: number | undefined;
  only?: string[] | undefined;
  json?: boolean | undefined;
  /** replace the generated block in this markdown file */
  write?: string | undefined;
  jobs?: number | undefined;
}

export async function zooTableCommand(o: ZooTableOptions): Promise<void> {
  await useZooConfig(o.config);
  const lm = await import('../../policies/targets/lm/index.ts');
  const { countProgress } = await import('../runner/progress.ts');
  // a bar on a TTY, else a line every HR1_PROGRESS_INTERVAL; total known once the entries are resolved
  const progress = countProgress({ label: 'zoo table', total: 0 });
  let rows: Awaited<ReturnType<typeof lm.zooTableRows>>;
  try {
    rows = await lm.zooTableRows({ ...(o.tasks ? { tasks: o.tasks } : {}), ...(o.seeds ? { seeds: o.seeds } : {}), jobs: o.jobs ?? Math.min(4, availableParallelism()), log: o.json ? (l: string) => process.stderr.write(`${l}\n`) : log, ...(o.only ? { only: o.only } : {}), onProgress: (p) => progress.update(p.done, p) });
    progress.finish();
  } finally {
    progress.stop();
  }
  const md = lm.zooTableMarkdown(rows);
  if (o.json) console.log(JSON.stringify(lm.zooTableJson(rows)));
  else console.log(md);
  if (o.write) {
    // rows of models not built or vendored here keep what was measured where they were (see mergeZooTable)
    const merged = lm.mergeZooTable(readFileSync(o.write, 'utf8'), md, lm.knownZoo().map((z) => z.name));
    writeFileSync(o.write, merged.text);
    process.stderr.write(`wrote ${o.write}${merged.kept ? `: ${merged.kept} earlier row${merged.kept === 1 ? '' : 's'} kept (${merged.unbuilt} of models not built or vendored here, ${merged.kept - merged.unbuilt} not measured again)` : ''}\n`);
  }
}

export interface ZooProbeOptions {
  config?: string | undefined;
  /** names (default: every built or vendored DBBench entry) */
  only?: string[] | undefined;
  tasks?: number | undefined;
  rename?: number | undefined;
  temperature?: number | undefined;
  json?: boolean | undefined;
}

/**
 * `hr1 zoo probe`: DBBench targets on fresh synthetic tasks of their own training distribution
 * (dbbench/probe.ts), to tell "did not learn the skill" from "does not carry it to dev".
 */
export async function zooProbe(o: ZooProbeOptions): Promise<void> {
  await useZooConfig(o.config);
  const lm = await import('../../policies/targets/lm/index.ts');
  const names = o.only ?? lm.knownZoo().filter((z) => z.envs.includes('dbbench') && lm.locateModel(lm.resolveConfig(z.name), {})).map((z) => z.name);
  if (names.length === 0) {
    log('zoo probe: no DBBench target is built or vendored; build one with `hr1 zoo build --only db-s-384-vrt`');
    return;
  }
  const out: ({ name: string; target: string; phrasing: string; rename: number } & import('../../policies/targets/lm/index.ts').ProbeResult)[] = [];
  for (const name of names) {
    const c = lm.resolveConfig(name);
    if (!c.envs.includes('dbbench')) throw new lm.LmTargetError('LM_BAD_OPTION', `zoo probe: lm/${name} is not a DBBench target (envs: ${c.envs.join(', ')}); the probe plays synthetic DBBench tasks`, { data: { name } });
    const m = await lm.lmTarget(name, o.temperature !== undefined ? { temperature: o.temperature } : {});
    const t0 = Date.now();
    try {
      const phrasing = c.phrasing ?? 'base';
      const r = await lm.probeSynthetic(m, { ...(o.tasks ? { tasks: o.tasks } : {}), ...(o.rename !== undefined ? { rename: o.rename } : {}), phrasing });
      out.push({ name, target: `lm/${name}`, phrasing, rename: o.rename ?? 1, ...r });
      log(`lm/${name}: ${r.won}/${r.tasks} synthetic tasks won (${(Date.now() - t0) / 1000} s)`);
    } finally {
      await m.release();
    }
  }
  if (o.json) {
    console.log(JSON.stringify(out));
    return;
  }
  const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
  const frac = (x: { tasks: number; won: number }): string => `${x.won}/${x.tasks}`;
  console.log(table(['target', 'phrasing', 'tasks', 'success [95 % CI]', 'reads', 'writes', 'invalid'], out.map((p) => [p.target, p.phrasing, p.tasks, `${pct(p.success)} [${pct(p.successCi[0])}, ${pct(p.successCi[1])}]`, frac(p.reads), frac(p.writes), pct(p.invalid)])));
  console.log('\nfresh synthetic tasks (every table renamed: new name, headers and values), drawn with a seed no build uses; compare with the dev split in `hr1 zoo table`');
}

export interface ZooCompareOptions {
  config?: string | undefined;
  env?: string | undefined;
  tasks?: number | undefined;
  seeds?: number | undefined;
  json?: boolean | undefined;
}

/**
 * `hr1 zoo compare A B`: B − A on the same evaluation episodes, paired per task
 * (policies/targets/lm/compare.ts); plays what the models' cached figures do not hold.
 */
export async function zooCompare(a: string, b: string, o: ZooCompareOptions): Promise<void> {
  await useZooConfig(o.config);
  const lm = await import('../../policies/targets/lm/index.ts');
  const bare = (n: string): string => n.replace(/^lm\//, '');
  const [na, nb] = [bare(a), bare(b)];
  const env = lm.compareEnv(na, nb, o.env as import('../../policies/targets/lm/index.ts').LmEnv | undefined);
  const { countProgress } = await import('../runner/progress.ts');
  const all = lm.taskIds(env, lm.EVAL_SPLIT[env]).length;
  const per = Math.min(o.tasks ?? all, all) * (o.seeds ?? lm.DEFAULT_TABLE_SEEDS);
  // cached figures play nothing, so the bar may finish early
  const progress = countProgress({ label: 'zoo compare', total: 2 * per });
  let done = 0;
  let c: import('../../policies/targets/lm/index.ts').ZooComparison;
  try {
    c = await lm.compareVanilla(na, nb, { env, ...(o.tasks ? { tasks: o.tasks } : {}), ...(o.seeds ? { seeds: o.seeds } : {}), onEpisode: () => progress.update(++done) });
    progress.finish();
  } finally {
    progress.stop();
  }
  if (o.json) {
    const { vanillaA: _a, vanillaB: _b, ...rest } = c;
    console.log(JSON.stringify(rest));
    return;
  }
  console.log(lm.formatZooComparison(c));
}
