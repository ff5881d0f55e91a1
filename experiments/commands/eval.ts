import { readFileSync } from 'node:fs';
import { Hr1Error } from '../../cluster/errors.ts';
import { ClientStatsCollector, EpisodeCache, DEFAULT_CACHE_PATH, formatEndpointStats, rollout, summarizeRecords } from '../../drivers/index.ts';
import { countProgress, progressIntervalMs, type CountProgress } from '../runner/progress.ts';
import { envDescriptor, listTasks, type EnvOptions } from '../../envs/registry.ts';
import { describeTargetOptions, isDefaultTargetOptions, resolveTargetOptions, type TargetOptions } from '../../policies/targets/options.ts';
import { targetFlagsOf } from '../cli/options.ts';
import { BASELINES, BASELINE_NAMES, type BaselineName } from '../../policies/targets/baselines.ts';
import { startCluster, type ClusterCliOptions } from './runtime.ts';
import { checkTarget } from './targets.ts';
import { table } from './table.ts';
import type { EpisodeRecord } from '../../harness/index.ts';

export interface EvalOptions extends ClusterCliOptions {
  env: string;
  target: string;
  patch?: string;
  baseline?: string;
  split?: string;
  tasks?: string;
  seeds: string;
  data?: string;
  protocol?: 'react' | 'agentbench';
  db?: string;
  json?: boolean;
  cache: boolean;
  cachePath: string;
  replicas: number;
  envThreads: number;
  inProcess?: boolean;
  progress: boolean;
  /** the target settings' flags (experiments/cli/options.ts addTargetOptions); see targetFlagsOf */
  [flag: string]: unknown;
}

/**
 * `--tasks 20` (the first 20 of the split), `--tasks 0-9,15` (indices) or `--tasks id1,id2`. A
 * count beyond the split is an error naming the split's size (`split` names it in the message).
 */
export function selectTasks(all: string[], spec: string | undefined, split = 'this split'): string[] {
  if (!spec) return all;
  if (/^\d+$/.test(spec)) {
    const n = Number(spec);
    if (n === 0) throw new Hr1Error('BAD_OPTION', '--tasks: 0 tasks is no evaluation; give a positive count, index ranges (0-9,15) or ids');
    if (n > all.length) throw new Hr1Error('BAD_OPTION', `--tasks: ${n} is more than the ${all.length} tasks of ${split === 'this split' ? split : `split ${split}`}; give at most ${all.length}`, { data: { tasks: n, split, size: all.length } });
    return all.slice(0, n);
  }
  if (/^[\d,\s-]+$/.test(spec)) {
    const out: string[] = [];
    for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
      const m = /^(\d+)(?:-(\d+))?$/.exec(part);
      if (!m) throw new Hr1Error('BAD_OPTION', `--tasks: "${part}" is not a count, an index or a range; write e.g. --tasks 20, --tasks 0-9,15 or task ids`);
      const a = Number(m[1]);
      const b = m[2] === undefined ? a : Number(m[2]);
      if (b < a) throw new Hr1Error('BAD_OPTION', `--tasks: the range "${part}" ends before it starts; write e.g. --tasks 0-9`);
      for (let i = a; i <= b; i++) {
        const t = all[i];
        if (t === undefined) throw new Hr1Error('BAD_OPTION', `--tasks: index ${i} is out of range (${split === 'this split' ? 'the split' : `split ${split}`} has ${all.length} tasks: 0-${all.length - 1})`);
        out.push(t);
      }
    }
    return out;
  }
  const ids = spec.split(',').map((s) => s.trim());
  for (const id of ids) if (!all.includes(id)) throw new Hr1Error('BAD_OPTION', `--tasks: no task "${id}" in this split; give a count, index ranges (0-9,15) or ids`);
  return ids;
}

export function parseSeeds(spec: string): number[] {
  const out: number[] = [];
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Hr1Error('BAD_OPTION', `--seeds: "${part}" is not a seed or a range; write e.g. --seeds 1,2,3 or --seeds 1-5`);
    for (let s = Number(m[1]); s <= Number(m[2] ?? m[1]); s++) out.push(s);
  }
  if (out.length === 0) throw new Hr1Error('BAD_OPTION', '--seeds: give at least one seed');
  return out;
}

function loadPatch(o: EvalOptions): unknown {
  if (o.patch && o.baseline) throw new Hr1Error('BAD_OPTION', '--patch and --baseline exclude each other; give one');
  if (o.baseline) {
    if (!BASELINE_NAMES.includes(o.baseline as BaselineName)) throw new Hr1Error('BAD_OPTION', `--baseline: "${o.baseline}" is not a baseline; choose ${BASELINE_NAMES.join(', ')}`);
    return BASELINES[o.baseline as BaselineName];
  }
  if (!o.patch) return null;
  let text: string;
  try {
    text = readFileSync(o.patch, 'utf8');
  } catch (e) {
    throw new Hr1Error('BAD_OPTION', `--patch ${o.patch}: cannot read it (${(e as Error).message}); pass a patch JSON file`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Hr1Error('BAD_PATCH', `--patch ${o.patch}: not JSON (${(e as Error).message}); check it with hr1 patch check ${o.patch}`);
  }
}

function hookTotals(records: readonly EpisodeRecord[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const r of records) for (const h of r.hooks) for (const [k, v] of Object.entries(h.counters)) if (typeof v === 'number') t[k] = (t[k] ?? 0) + v;
  return t;
}

function openCache(path: string): EpisodeCache {
  try {
    return new EpisodeCache(path);
  } catch (e) {
    throw new Hr1Error('BAD_OPTION', `--cache-path ${path}: cannot open the episode cache there (${(e as Error).message}); pass a writable file path, or --no-cache`, { cause: e });
  }
}

/** The target settings of `hr1 eval`'s flags, checked against the target's kind and the env; errors name the flag. */
export function evalTargetOptions(o: Pick<EvalOptions, 'target' | 'env'> & Record<string, unknown>): TargetOptions {
  const { raw, name } = targetFlagsOf(o);
  return resolveTargetOptions(o.target, raw, { envs: [o.env], name });
}

/** `hr1 eval`: roll a target (+ patch) out on tasks × seeds and report. Every option is checked before the cluster starts. */
export async function runEval(o: EvalOptions): Promise<void> {
  const spec = checkTarget(o.target);
  const targetOptions = evalTargetOptions(o);
  const envOptions: EnvOptions = { data: o.data, protocol: o.protocol, db: o.db };
  const tasks = selectTasks(listTasks(o.env, o.split, envOptions), o.tasks, o.split ?? envDescriptor(o.env).splits.heldout);
  const seeds = parseSeeds(o.seeds);
  const episodes = seeds.flatMap((seed) => tasks.map((taskId) => ({ taskId, seed })));
  const patch = loadPatch(o);
  const settings = isDefaultTargetOptions(targetOptions) ? undefined : targetOptions;
  const showProgress = o.progress && !o.json;
  // a bad HR1_PROGRESS_INTERVAL fails before the cluster starts
  const intervalMs = showProgress ? progressIntervalMs() : 0;
  const rt = await startCluster(o);
  let cache: EpisodeCache | null = null;
  const simNote = spec.kind === 'sim' ? ' (SIMULATED target)' : '';
  const log = (l: string) => process.stderr.write(`${l}\n`);
  let progress: CountProgress | null = null;
  const clientStats = new ClientStatsCollector();
  let reported = false;
  try {
    if (!o.json) log(`hr1 eval: ${o.env}, ${tasks.length} tasks × ${seeds.length} seeds, target ${o.target}${simNote}${settings ? ` (${describeTargetOptions(settings)})` : ''}, ${o.baseline ? `baseline ${o.baseline}` : o.patch ? `patch ${o.patch}` : 'no patch'}; ${rt.note}`);
    cache = o.cache ? openCache(o.cachePath) : null;
    // a bar on a TTY; otherwise a line every HR1_PROGRESS_INTERVAL (10 s) and a final one
    progress = countProgress({ label: 'eval', total: episodes.length, mode: showProgress ? 'auto' : 'silent', intervalMs });
    const r = await rollout(rt.cluster, { env: o.env, target: o.target, patch, episodes, envOptions, ...(settings ? { targetOptions: { ...settings } } : {}) }, {
      cache,
      replicas: o.replicas,
      envThreads: o.envThreads,
      onProgress: (p) => progress?.update(p.done, { cached: p.cached }),
      log,
      clientStats,
    });
    progress.finish();
    const s = summarizeRecords(r.records);
    // the endpoint client's counters over the target's replicas (openai: targets; null otherwise)
    const cs = clientStats.total(o.target);
    const hooks = hookTotals(r.records);
    if (o.json) {
      console.log(JSON.stringify({ env: o.env, target: o.target, simulated: spec.kind === 'sim', targetOptions: settings ?? {}, patch: o.patch ?? o.baseline ?? null, tasks: tasks.length, seeds, ...s, hooks, stats: r.stats, ...(cs ? { client_stats: cs } : {}) }, null, 2));
    } else {
      console.log(table(['env', 'target', 'episodes', 'success', 'score', 'avg steps', 'interventions', 'hint words/decision', 'statuses'], [[o.env, `${o.target}${simNote}`, s.episodes, `${(s.success * 100).toFixed(1)}%`, s.score.toFixed(3), s.steps.toFixed(1), `${(s.interventionRate * 100).toFixed(1)}%`, s.hintTokensPerDecision.toFixed(1), Object.entries(s.statuses).map(([k, v]) => `${k} ${v}`).join(', ')]]));
      const hk = Object.entries(hooks).filter(([, v]) => v > 0);
      if (hk.length) console.log(`\nhook counters: ${hk.map(([k, v]) => `${k} ${v}`).join(', ')}`);
      if (cs) console.log(`\n${formatEndpointStats(cs)}`);
      reported = true;
      console.log(`\n${r.stats.ran} episodes run, ${r.stats.cached} from the cache${cache ? ` (${cache.path})` : ''}, ${r.stats.resent} chunks re-sent, ${r.stats.rerun} episodes re-run after infra errors, ${(r.stats.ms / 1000).toFixed(1)} s, nodes: ${r.stats.nodes.join(', ') || '-'}`);
    }
  } finally {
    progress?.stop();
    // a run that failed (an endpoint down) still tells what its client saw
    if (!reported && !o.json) for (const c of clientStats.totals()) log(formatEndpointStats(c));
    cache?.close();
    await rt.shutdown();
    const { closeAll } = await import('../../envs/dbbench/index.ts');
    await closeAll();
  }
}

export { DEFAULT_CACHE_PATH };
