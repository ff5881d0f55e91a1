/**
 * The trained built-in engineers as experiment methods. `--engineer DIR` names a `hr1 train` run
 * folder (engineer-sft.onnx, engineer.onnx), or a folder with one such run per env (DIR/<env>/…).
 * They are part of the built-in methods (see `builtinMethods()` in methods.ts): nothing has to
 * register them, whichever entry point (CLI or code) looks them up.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { baseRecords, rewardOf, type SftRow } from '../../drivers/index.ts';
import { envDescriptor } from '../../envs/registry.ts';
import { hashString } from '../../cluster/rng.ts';
import { extractPacket, loadBuiltinEngineer, packetHash, type Packet } from '../../policies/engineer/index.ts';
import { hfRunFile, proposeFromHfRun } from '../../policies/engineer/hf/index.ts';
import { TRAIN_SPLITS_FILE, findTrainSplits } from '../train-plan.ts';
import { MethodProposal, scoreOnOwnBatch, type CandidateRecord, type CandidatesRecord } from './best-of-k.ts';
import { ExpError } from './errors.ts';
import { isLlmEngineerSpec } from './llm-editor.ts';
import type { Method, MethodContext, MethodOptions } from './methods.ts';

/** Why an engineer row is empty when no engineer is given. */
export const ENGINEER_MISSING = 'not available (engineer not trained: run hr1 train, then pass --engineer RUN_DIR)';
/** Why a trained-engineer row is empty when `--engineer` names an LLM (`openai:…`, for llm-editor). */
export const ENGINEER_IS_LLM = 'not available (--engineer names an LLM engineer, openai:…, which only llm-editor uses; a trained engineer needs --engineer RUN_DIR)';

/** true when `--engineer` names a trained engineer's folder, else why not. */
function trainedEngineer(o: MethodOptions, missing: string): true | string {
  if (!o.engineer) return missing;
  return isLlmEngineerSpec(o.engineer) ? ENGINEER_IS_LLM : true;
}

function modelPath(o: MethodOptions, env: string, file: string): string | undefined {
  if (!o.engineer) return undefined;
  // an hf: engineer's run holds engineer(-sft).safetensors where a built-in one holds the .onnx
  const alt = file.replace(/\.onnx$/, '.safetensors');
  for (const d of [join(o.engineer, env), o.engineer]) for (const f of [file, alt]) if (existsSync(join(d, f))) return join(d, file);
  return undefined;
}

/**
 * How the engineer run that serves `env` sampled its GRPO candidates (its `config.json`'s
 * `grpo.temperature` and `grpo.topP`), or a typed error naming the file.
 */
function grpoSampling(o: MethodOptions, env: string, method: string): { temperature: number; topP: number } {
  const file = modelPath(o, env, 'config.json');
  let grpo: { temperature?: unknown; topP?: unknown } | undefined;
  try {
    grpo = file ? (JSON.parse(readFileSync(file, 'utf8')) as { grpo?: typeof grpo }).grpo : undefined;
  } catch {
    grpo = undefined;
  }
  if (typeof grpo?.temperature !== 'number' || typeof grpo.topP !== 'number') {
    throw new ExpError('EXP_METHOD_FAILED', `${method}: no readable config.json with grpo.temperature and grpo.topP for ${env} under ${o.engineer} (expected ${join(o.engineer ?? '?', env, 'config.json')}); pass --engineer with a hr1 train run folder`, { path: 'engineer', data: { method, env } });
  }
  return { temperature: grpo.temperature, topP: grpo.topP };
}

/**
 * An engineer checkpoint as a method. Greedy (`sampled: false`): its single most likely token at
 * each step. Sampled: one patch drawn as that run's GRPO drew its candidates (its
 * `grpo.temperature` and `grpo.topP`), seeded by the packet and the run's seed, so the same packet
 * and seed give the same patch; over a table's packets its value estimates the expected reward
 * GRPO maximised, where greedy decoding can leave that distribution (docs/EXPERIMENTS.md, the main
 * job). An hf: engineer decodes greedily only, so its sampled rows are a typed error.
 */
function engineerMethod(name: string, label: string, file: string, sampled = false): Method {
  return {
    name,
    label,
    kind: 'engineer',
    version: sampled ? 'builtin-sampled-1' : 'builtin-1',
    available: (o) => trainedEngineer(o, ENGINEER_MISSING),
    propose: (ctx) => engineerPropose(ctx, ctx.packet, name, file, sampled),
  };
}

/**
 * The engineer checkpoint `file` of the run that serves `ctx.env`, and its hf: run file when it is
 * one; a typed error naming the expected paths when there is none, and for an hf: engineer when the
 * method samples (`greedy` names the method to use instead).
 */
function engineerCheckpoint(ctx: MethodContext, name: string, file: string, sampled: { greedy: string } | null): { path: string; hf: ReturnType<typeof hfRunFile> } {
  const path = modelPath(ctx.options, ctx.env, file);
  if (!path) {
    throw new ExpError('EXP_METHOD_FAILED', `${name}: no ${file} for ${ctx.env} under ${ctx.options.engineer} (expected ${join(ctx.options.engineer ?? '?', ctx.env, file)} or ${join(ctx.options.engineer ?? '?', file)}); pass --engineer with a hr1 train run folder`, { path: 'engineer', data: { method: name, env: ctx.env } });
  }
  // an hf: engineer's run (engineer.safetensors beside config.json): its greedy patch through the torch sampler
  const hf = hfRunFile(dirname(path), file);
  if (hf && sampled) throw new ExpError('EXP_METHOD_FAILED', `${name}: the hf: engineer under ${ctx.options.engineer} decodes greedily only; use ${sampled.greedy}`, { path: 'engineer', data: { method: name, env: ctx.env } });
  return { path, hf };
}

/** The patch the engineer checkpoint `file` writes for `packet` (greedy, or one seeded sampled draw). */
async function engineerPropose(ctx: MethodContext, packet: Packet, name: string, file: string, sampled: boolean): Promise<unknown | null> {
  const { path, hf } = engineerCheckpoint(ctx, name, file, sampled ? { greedy: name.replace(/-sampled$/, '') } : null);
  if (hf) return proposeFromHfRun(dirname(path), hf, packet);
  // sampled: one draw as the run's GRPO drew, seeded by (seed, packet); greedy: the most likely token at each step
  const decode = sampled ? { k: 1, ...grpoSampling(ctx.options, ctx.env, name), seed: hashString(`${ctx.seed}|${packetHash(packet)}`) } : { temperature: 0 };
  const [patch] = await loadBuiltinEngineer(path).propose(packet, decode);
  return patch ?? null;
}

/**
 * The SFT+GRPO engineer choosing among K of its own patches on the packet's own batch, as the
 * prompted editor's best-of-K does (K = `editor.k`): its greedy patch and K − 1 draws as its GRPO
 * drew (its `grpo.temperature` and `grpo.topP`, seeded by the run's seed and the packet), each
 * rerun on the packet's train batch (paired with its vanilla records, never a test episode); the
 * one with the largest Δ of the env's primary metric (WebShop's score) is submitted, ties to the
 * earlier (the greedy patch first). Not the paper's method (one patch per packet): a test-time
 * selection with the editor's budget, measured as its own row.
 */
export const ENGINEER_GRPO_BEST_OF_K: Method = {
  name: 'engineer-grpo-best-of-k',
  label: 'engineer, SFT+GRPO, best of K on the packet\'s batch',
  kind: 'engineer',
  version: 'builtin-best-of-k-1',
  available: (o) => trainedEngineer(o, ENGINEER_MISSING),
  async propose(ctx) {
    const name = ENGINEER_GRPO_BEST_OF_K.name;
    const { path } = engineerCheckpoint(ctx, name, 'engineer.onnx', { greedy: 'engineer-grpo' });
    const k = Math.max(1, ctx.options.editor.k);
    const eng = loadBuiltinEngineer(path);
    const [greedy] = await eng.propose(ctx.packet, { temperature: 0 });
    const drawn = k > 1 ? await eng.propose(ctx.packet, { k: k - 1, ...grpoSampling(ctx.options, ctx.env, name), seed: hashString(`${ctx.seed}|${packetHash(ctx.packet)}|best-of-k`) }) : [];
    const patches = [greedy ?? null, ...drawn];
    const { best, results } = await scoreOnOwnBatch(ctx, patches, { metric: envDescriptor(ctx.env).metrics[0] });
    const list: CandidateRecord[] = results.map((r, i) => ({ seed: i, attempts: 1, valid: r.valid, delta: r.valid ? r.delta : null, hash: r.patchHash ?? '', ...(r.valid ? {} : { issues: (r.issues ?? []).map((x) => `${x.code} at ${x.path}: ${x.message}`) }) }));
    const candidates: CandidatesRecord = { k: patches.length, valid: list.filter((c) => c.valid).length, invalid: list.filter((c) => !c.valid).length, retried: 0, repaired: 0, chosen: best, list };
    if (best === null) return new MethodProposal(null, { invalid: `none of the ${patches.length} patches is valid`, candidates });
    return new MethodProposal(patches[best], { candidates });
  },
};

/** `engineer-sft` and `engineer-grpo`, the built-in engineer's two checkpoints. */
export function engineerMethods(): Method[] {
  return [
    engineerMethod('engineer-sft', 'engineer, SFT only', 'engineer-sft.onnx'),
    engineerMethod('engineer-grpo', 'engineer, SFT+GRPO (Harness-R1)', 'engineer.onnx'),
    engineerMethod('engineer-sft-sampled', 'engineer, SFT only (sampled)', 'engineer-sft.onnx', true),
    engineerMethod('engineer-grpo-sampled', 'engineer, SFT+GRPO (sampled)', 'engineer.onnx', true),
  ];
}

/** Candidates and training batches the best fixed patch is chosen over (each candidate is rerun on each batch). */
export const BEST_FIXED_CANDIDATES = 8;
export const BEST_FIXED_BATCHES = 8;
export const BEST_FIXED_MISSING = 'not available (chosen from an engineer run\'s SFT proposals: pass --engineer with a hr1 train run folder)';

/**
 * The target the engineer run that serves `env` was trained on (its `splits.json`, per env, as
 * the experiments' disjointness check reads it), or a typed error naming the file.
 */
function engineerTargetOf(o: MethodOptions, env: string, method: string): string {
  const target = o.engineer ? findTrainSplits(o.engineer, env)?.splits.envs?.[env]?.target : undefined;
  if (typeof target !== 'string' || !target) {
    throw new ExpError('EXP_METHOD_FAILED', `${method}: no ${TRAIN_SPLITS_FILE} with a target for ${env} under ${o.engineer} (expected ${join(o.engineer ?? '?', env, TRAIN_SPLITS_FILE)}); pass --engineer with a hr1 train run folder`, { path: 'engineer', data: { method, env } });
  }
  return target;
}

/**
 * A best fixed patch. Candidates: the verified teacher proposals of the engineer's SFT set
 * (`sft.jsonl`, its `BEST_FIXED_CANDIDATES` with the largest Δ on their own batch, distinct
 * patches); each is rerun on the same `BEST_FIXED_BATCHES` training batches (that engineer's SFT
 * batches, so never evaluation episodes) and the one with the highest mean Δ of the env's primary
 * metric (the one the tables report: WebShop's score, success elsewhere) is applied to every test
 * packet. It reads no test packet. `on: 'target'` reruns the candidates on the target being
 * evaluated (retuned to it); `on: 'engineer-target'` on the target the engineer was trained on
 * (its `splits.json`), so on any other target it is that target's patch carried over, not retuned,
 * as the engineer is.
 */
function bestFixed(name: string, label: string, version: string, on: 'target' | 'engineer-target'): Method {
  return {
    name,
    label,
    kind: 'engineer',
    version,
    fixed: true,
    available: (o) => trainedEngineer(o, BEST_FIXED_MISSING),
    async propose(ctx) {
      const file = modelPath(ctx.options, ctx.env, 'sft.jsonl');
      if (!file) throw new ExpError('EXP_METHOD_FAILED', `${name}: no sft.jsonl for ${ctx.env} under ${ctx.options.engineer}; pass --engineer with a hr1 train run folder`, { path: 'engineer', data: { method: name, env: ctx.env } });
      const rows = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as SftRow).filter((r) => r.env === ctx.env);
      if (rows.length === 0) return null;
      const seen = new Set<string>();
      const candidates = [...rows].sort((a, b) => b.delta - a.delta || (a.patchHash < b.patchHash ? -1 : 1)).filter((r) => !seen.has(r.patchHash) && seen.add(r.patchHash)).slice(0, BEST_FIXED_CANDIDATES);
      const batches = [...new Map(rows.map((r) => [JSON.stringify(r.batch), r.batch])).values()].slice(0, BEST_FIXED_BATCHES);
      const target = on === 'target' ? ctx.target : engineerTargetOf(ctx.options, ctx.env, name);
      // the engineer's target plays as the engineer's training played it (no per-target settings of the evaluated one)
      const spec = { env: ctx.env, target, cache: ctx.cache, envOptions: ctx.envOptions, ...(on === 'target' && ctx.targetOptions ? { targetOptions: ctx.targetOptions } : {}) };
      const bases = [];
      for (const b of batches) bases.push(await baseRecords(ctx.cluster, { ...spec, episodes: b }));
      let best: SftRow | null = null;
      let bestMean = -Infinity;
      for (const c of candidates) {
        let sum = 0;
        for (let i = 0; i < batches.length; i++) {
          const r = await rewardOf(ctx.cluster, { ...spec, episodes: batches[i]!, patch: c.patch, base: bases[i]! }, { metric: envDescriptor(ctx.env).metrics[0] });
          sum += r.valid ? r.delta : 0;
        }
        if (sum / batches.length > bestMean) {
          bestMean = sum / batches.length;
          best = c;
        }
      }
      return best?.patch ?? null;
    },
  };
}

/** The best fixed patch: one packet-blind patch for every test packet, chosen on the evaluated target (see {@link bestFixed}). */
// version 2: chosen by the env's primary metric (WebShop's score), the one the tables report
export const BEST_FIXED_PATCH: Method = bestFixed('best-fixed-patch', 'best fixed patch', 'best-fixed-2', 'target');

/**
 * The best fixed patch chosen on the engineer's training target and carried over unchanged: the
 * cross-model control with the engineer's own information (neither is retuned to the new target).
 * On the engineer's own target it is the best fixed patch.
 */
export const BEST_FIXED_TRANSFER: Method = bestFixed('best-fixed-transfer', 'best fixed patch (carried over)', 'best-fixed-transfer-1', 'engineer-target');

/**
 * The packet-reading control of the cross-model table: the SFT+GRPO engineer (greedy) writes each
 * packet's patch from its own training target's failures instead of the evaluated target's (the
 * packet extracted from the engineer's target's vanilla rollout of the same train batch, same
 * tasks and seeds), and the patch is applied to the evaluated target. Engineer − this is what
 * reading the evaluated target's failures is worth; on the engineer's own target the two are the
 * same patch. Like the engineer it is not retuned.
 */
export const ENGINEER_GRPO_TRANSFER: Method = {
  name: 'engineer-grpo-transfer',
  label: 'engineer, SFT+GRPO (reading its own target\'s packets)',
  kind: 'engineer',
  version: 'builtin-transfer-1',
  available: (o) => trainedEngineer(o, ENGINEER_MISSING),
  async propose(ctx) {
    const name = ENGINEER_GRPO_TRANSFER.name;
    const target = engineerTargetOf(ctx.options, ctx.env, name);
    // the engineer's target plays as the engineer's training played it (no per-target settings of the evaluated one)
    const packet = target === ctx.target ? ctx.packet : extractPacket(await baseRecords(ctx.cluster, { env: ctx.env, target, cache: ctx.cache, envOptions: ctx.envOptions, episodes: ctx.trainEpisodes }));
    return engineerPropose(ctx, packet, name, 'engineer.onnx', false);
  },
};
