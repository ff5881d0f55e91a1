/**
 * Fixed numeric features of a (packet, patch) candidate, the input of the validation and reward
 * models: packet signal totals and counts, the env one-hot and the diagnosis; the patch as a
 * multi-hot over the grammar's structural tokens (hooks, predicates, paths, comparisons, effects,
 * blocks) plus counts per hook. Pure; same input → same vector.
 */
import { ENV_NAMES } from '../../envs/registry.ts';
import { toPatch, type Patch } from '../../harness/index.ts';
import { STRUCTURE_TOKENS, FINDING_KINDS, engineerToken, patchToTokens, diagnose, packetNames, type Packet } from '../engineer/index.ts';

/** Bump when the vector changes; models record it and refuse a mismatch. */
export const FEATURE_VERSION = 2;

// the shipped envs only: the vector's layout must not change with registered envs
const ENVS = [...ENV_NAMES, 'other'] as const;
const SIGNALS = ['repeated', 'noOps', 'invalidFormats', 'sqlErrors', 'invalidClicks', 'repeatedObservations', 'stepLimit'] as const;
const FINDINGS = FINDING_KINDS;
const HOOKS = ['init', 'preDecision', 'preAction', 'postFeedback'] as const;

/** Names of the packet part of the vector, in order. */
export const PACKET_FEATURE_NAMES: readonly string[] = [
  ...ENVS.map((e) => `env:${e}`),
  'batch:won_rate',
  'batch:failed_rate',
  'batch:error_rate',
  'batch:shown_frac',
  ...SIGNALS.flatMap((s) => [`sig:${s}:episodes_frac`, `sig:${s}:log_count`]),
  ...FINDINGS.map((f) => `finding:${f}`),
];

/** Names of the patch part of the vector, in order. */
export const PATCH_FEATURE_NAMES: readonly string[] = [
  ...STRUCTURE_TOKENS.map((t) => `tok:${t}`),
  'patch:in_grammar',
  'patch:skills',
  'patch:rules',
  'patch:code',
  ...HOOKS.flatMap((h) => [`rule:${h}`, `code:${h}`]),
  'patch:components',
];

export const FEATURE_NAMES: readonly string[] = [...PACKET_FEATURE_NAMES, ...PATCH_FEATURE_NAMES];
/** Width of {@link candidateFeatures}. */
export const FEATURE_DIM = FEATURE_NAMES.length;

/** The packet part: env, batch rates, signal totals (episode share and log count), findings. */
export function packetFeatures(p: Packet): number[] {
  const env = (ENVS as readonly string[]).includes(p.env) ? p.env : 'other';
  const n = Math.max(1, p.batch.episodes);
  const shown = Math.max(1, p.episodes.length);
  const out: number[] = ENVS.map((e) => (e === env ? 1 : 0));
  out.push(p.batch.won / n, p.batch.failed / n, p.batch.errors / n, p.episodes.length / 20);
  for (const s of SIGNALS) {
    const t = p.totals[s];
    out.push(t.episodes / shown, Math.log1p(t.count) / 6);
  }
  const found = new Map(diagnose(p).map((f) => [f.kind, f.episodes]));
  for (const f of FINDINGS) out.push((found.get(f) ?? 0) / shown);
  return out;
}

const STRUCT_INDEX = new Map(STRUCTURE_TOKENS.map((t, i) => [t, i]));

/** The patch part: a multi-hot over the grammar's structural tokens, whether the patch is in the grammar's space, counts per kind and hook. */
export function patchFeatures(patch: unknown, names: readonly string[] = []): number[] {
  const p: Patch = toPatch(patch);
  const hot = new Array<number>(STRUCTURE_TOKENS.length).fill(0);
  const toks = patchToTokens(p, names);
  for (const id of toks ?? []) {
    const i = STRUCT_INDEX.get(engineerToken(id) ?? '');
    if (i !== undefined) hot[i] = 1;
  }
  const skills = p.skills?.length ?? 0;
  const rules = p.rules ?? [];
  const code = p.code ?? [];
  const out = [...hot, toks ? 1 : 0, skills / 5, rules.length / 12, code.length / 12];
  for (const h of HOOKS) out.push(rules.filter((r) => r.hook === h).length / 4, code.filter((c) => c.hook === h).length / 4);
  out.push((skills + rules.length + code.length) / 8);
  return out;
}

/** The model input: packet features ++ patch features ({@link FEATURE_DIM} numbers). */
export function candidateFeatures(packet: Packet, patch: unknown): number[] {
  return [...packetFeatures(packet), ...patchFeatures(patch, packetNames(packet))];
}
