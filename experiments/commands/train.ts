/** `hr1 train`: resolve the config, build a missing lm/ target, train on the given cluster, print the summary. */
import { ConfigError } from '../../cluster/errors.ts';
import { startCluster, type ClusterCliOptions } from './runtime.ts';
import { checkTarget } from './targets.ts';
import { table } from './table.ts';

export interface TrainCommandOptions extends ClusterCliOptions {
  env?: string | undefined;
  target?: string | undefined;
  config?: string | undefined;
  iterations?: number | undefined;
  seed?: number | undefined;
  out?: string | undefined;
  resume?: boolean | undefined;
  pipeline?: boolean | undefined;
  maxStaleness?: number | undefined;
  validator?: string | undefined;
  engineer?: string | undefined;
  lora?: string | undefined;
  device?: 'auto' | 'cpu' | 'cuda' | undefined;
  python?: string | undefined;
}

/** `--lora r=16,alpha=32[,dropout=0.05][,targets=q_proj+v_proj]` or `full`, as the config's hf fields. */
export function parseLoraOption(v: string): { lora: { r: number; alpha: number; dropout: number; targets?: string[] } | null; full: boolean } {
  if (v === 'full') return { lora: null, full: true };
  const out: { r: number; alpha: number; dropout: number; targets?: string[] } = { r: 16, alpha: 32, dropout: 0 };
  for (const part of v.split(',').map((x) => x.trim()).filter(Boolean)) {
    const [k, val] = part.split('=');
    if (val === undefined) throw new ConfigError('--lora', `"${part}" is not key=value; write e.g. r=16,alpha=32 or full`);
    if (k === 'targets') out.targets = val.split('+').filter(Boolean);
    else if (k === 'r' || k === 'alpha' || k === 'dropout') {
      const n = Number(val);
      if (!Number.isFinite(n) || n < 0 || (k === 'r' && (!Number.isInteger(n) || n < 1))) throw new ConfigError('--lora', `${k}=${val} is not a valid ${k === 'r' ? 'rank (an integer ≥ 1)' : 'number'}`);
      out[k] = n;
    } else throw new ConfigError('--lora', `unknown LoRA option "${k}"; known: r, alpha, dropout, targets (or the word full)`);
  }
  return { lora: out, full: false };
}

export async function trainCommand(o: TrainCommandOptions): Promise<void> {
  const { resolveTrainConfig, trainEngineer } = await import('../train.ts');
  const lora = o.lora !== undefined ? parseLoraOption(o.lora) : undefined;
  const cfg = resolveTrainConfig(o.config, { env: o.env, target: o.target, seed: o.seed, out: o.out, validator: o.validator, engineer: o.engineer, device: o.device, python: o.python });
  if (lora) cfg.hf = { ...cfg.hf, ...lora };
  if (o.iterations !== undefined) cfg.grpo.iterations = o.iterations;
  if (o.maxStaleness !== undefined && !o.pipeline && !cfg.pipeline) throw new ConfigError('--max-staleness', 'bounds the staleness of a pipelined run: add --pipeline (or a pipeline: section in the config)');
  if (o.pipeline || o.maxStaleness !== undefined) cfg.pipeline = { ...(cfg.pipeline ?? { maxStaleness: 1 }), ...(o.maxStaleness !== undefined ? { maxStaleness: o.maxStaleness } : {}) };
  const { trainPairs } = await import('../train.ts');
  const { ensureLmTargets, requireTargetEnvs } = await import('../exp/common.ts');
  const pairs = trainPairs(cfg);
  for (const p of pairs)
    for (const t of p.targets) {
      checkTarget(t);
      requireTargetEnvs(t, [p.env], 'target');
    }
  await ensureLmTargets([...new Set(pairs.flatMap((p) => p.targets))], (l) => process.stderr.write(`${l}\n`));
  const rt = await startCluster(o);
  try {
    const r = await trainEngineer(rt.cluster, cfg, undefined, { resume: o.resume ?? false });
    const g = r.iterations.filter((x) => x.phase === 'grpo');
    console.log(table(['phase', 'iterations', 'first', 'last'], [
      ['sft loss', r.iterations.filter((x) => x.phase === 'sft').length, (r.iterations.find((x) => x.phase === 'sft')?.loss ?? NaN).toFixed(4), (r.sft.finalLoss ?? NaN).toFixed(4)],
      ['grpo mean Δ', g.length, (g[0]?.meanDelta ?? NaN).toFixed(3), (g[g.length - 1]?.meanDelta ?? NaN).toFixed(3)],
    ]));
    const what = cfg.engineer === 'builtin' ? `${r.onnx} (ONNX)` : `${r.out}/engineer-hf (Hugging Face layout${cfg.hf.full ? '' : ', a PEFT LoRA adapter'}; its weights also in ${r.onnx})`;
    console.log(`\nengineer: ${what}, ${r.checkpoint} (torch); per-iteration log ${r.out}/iterations.jsonl; SFT rows ${r.sft.rows} (${r.sft.representable} used)`);
  } finally {
    await rt.shutdown();
  }
}
