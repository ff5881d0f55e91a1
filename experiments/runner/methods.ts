/**
 * Methods: what maps a failure packet to a patch. Baselines ignore the packet and return a fixed
 * patch; the prompted editor is the teacher (`llm-editor`, llm-editor.ts: an LLM at an
 * OpenAI-compatible endpoint, best-of-K); the built-in engineer's two checkpoints
 * (`engineer-sft`, `engineer-grpo`, engineer-methods.ts) are built in too, and say why their rows
 * are empty while no `engineer` path is given. {@link registerMethod} adds or replaces methods.
 */
import type { Cluster } from '../../cluster/client.ts';
import type { EpisodeCache } from '../../drivers/index.ts';
import type { EnvOptions } from '../../envs/registry.ts';
import type { EpisodeRef } from '../../actors/index.ts';
import type { EpisodeRecord } from '../../harness/index.ts';
import { BASELINES } from '../../policies/targets/baselines.ts';
import { teacherPropose, type Packet } from '../../policies/engineer/index.ts';
import { ExpError } from './errors.ts';
import { BEST_FIXED_PATCH, BEST_FIXED_TRANSFER, ENGINEER_GRPO_BEST_OF_K, ENGINEER_GRPO_TRANSFER, ENGINEER_MISSING, engineerMethods } from './engineer-methods.ts';
import { scoreOnOwnBatch, type MethodProposal } from './best-of-k.ts';
import { LLM_EDITOR, type LlmEditorInput } from './llm-editor.ts';

export type MethodKind = 'baseline' | 'editor' | 'engineer';

/** Options every method sees (from the experiment's config). */
export interface MethodOptions {
  /** an engineer checkpoint or ONNX file, for engineer methods (`--engineer PATH`); `openai:<base-url>#<model>` for llm-editor */
  engineer?: string | undefined;
  /** the prompted editor: K proposals, and which one it submits */
  editor: { k: number; select: 'first' | 'best-of-k' };
  /** the prompted LLM editor's settings (llm-editor.ts; its defaults where absent) */
  llmEditor?: LlmEditorInput | undefined;
}

/** What `propose` gets: the packet and the train rollout it came from (never test episodes). */
export interface MethodContext {
  env: string;
  target: string;
  packet: Packet;
  /** the vanilla records of the train batch the packet was extracted from */
  trainRecords: readonly EpisodeRecord[];
  trainEpisodes: readonly EpisodeRef[];
  /** the unit's seed (experiment seed and packet index) */
  seed: number;
  /** for methods that validate candidates on the train batch */
  cluster: Cluster;
  cache: EpisodeCache | null;
  envOptions: EnvOptions;
  /** the target's backend settings, for methods that roll candidates out (absent: none) */
  targetOptions?: Record<string, unknown>;
  options: MethodOptions;
}

export interface Method {
  /** a stable name: it keys results and rows (e.g. `engineer-grpo`) */
  name: string;
  kind: MethodKind;
  /** the row label in reports. @default name */
  label?: string;
  /** bumps the unit keys when the method changes, so old results are not reused */
  version?: string;
  /** a fixed patch that ignores the packet: evaluated once per env and target, not per packet */
  fixed?: boolean;
  /** true, or the reason it cannot run now (shown in its row) */
  available?: (o: MethodOptions) => true | string;
  /**
   * The method bound to a run's options, called once before the run starts: it may refuse them
   * (an ExpError naming the option) and returns a copy whose `version` covers the settings that
   * decide its patches (so they key its units) and whose `settings` run.json records.
   */
  configure?(o: MethodOptions): Method;
  /** the settings run.json records for this method (set by `configure`) */
  settings?: Record<string, unknown>;
  /**
   * a patch (any JSON the patch schema accepts), null for the unpatched harness, or a
   * {@link MethodProposal} (the patch with why it is invalid and its candidates, recorded with the row)
   */
  propose(ctx: MethodContext): Promise<unknown | null | MethodProposal>;
}

export { ENGINEER_MISSING };

function fixed(name: string, label: string, patch: unknown): Method {
  return { name, label, kind: 'baseline', fixed: true, propose: async () => patch };
}

/**
 * The prompted editor (teacher): K proposals from the packet; `first` submits the first one,
 * `best-of-k` reruns each on the packet's own train batch (paired seeds) and submits the one with
 * the largest Δ (ties: the earlier one). Test episodes are never seen.
 */
export const PROMPTED_EDITOR: Method = {
  name: 'prompted-editor',
  label: 'prompted editor (teacher)',
  kind: 'editor',
  async propose(ctx) {
    const props = teacherPropose(ctx.packet, { k: ctx.options.editor.k, seed: ctx.seed });
    if (props.length === 0) return null;
    if (ctx.options.editor.select === 'first' || props.length === 1) return props[0]!.patch;
    const { best } = await scoreOnOwnBatch(ctx, props.map((p) => p.patch));
    return props[best ?? 0]!.patch;
  },
};

/**
 * The built-in methods, in row order: the baselines, the prompted editors (the teacher, and an
 * LLM behind an OpenAI-compatible endpoint: llm-editor.ts) and the built-in engineers. The
 * registry starts as these, so every entry point sees the same methods.
 */
export function builtinMethods(): Method[] {
  return [
    fixed('vanilla', 'vanilla', BASELINES.vanilla),
    fixed('react', 'ReAct', BASELINES.react),
    fixed('self-refine', 'Self-Refine', BASELINES.selfRefine),
    PROMPTED_EDITOR,
    LLM_EDITOR,
    BEST_FIXED_PATCH,
    BEST_FIXED_TRANSFER,
    ...engineerMethods(),
    ENGINEER_GRPO_BEST_OF_K,
    ENGINEER_GRPO_TRANSFER,
  ];
}

const registry = new Map<string, Method>(builtinMethods().map((m) => [m.name, m]));

/** Add a method, or replace the one of the same name (e.g. the trained engineers). */
export function registerMethod(m: Method): void {
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(m.name)) throw new ExpError('EXP_UNKNOWN_METHOD', `a method name is lower-case letters, digits, . _ - (got "${m.name}")`);
  registry.set(m.name, m);
}

/** Put the built-in registry back (tests). */
export function resetMethods(): void {
  registry.clear();
  for (const m of builtinMethods()) registry.set(m.name, m);
}

export function methodNames(): string[] {
  return [...registry.keys()];
}

export function getMethod(name: string, path = 'methods'): Method {
  const m = registry.get(name);
  if (!m) throw new ExpError('EXP_UNKNOWN_METHOD', `${path}: unknown method "${name}"; choose one of ${methodNames().join(', ')} (or registerMethod() it)`, { path, data: { name } });
  return m;
}

export function methodAvailable(m: Method, o: MethodOptions): true | string {
  return m.available ? m.available(o) : true;
}
