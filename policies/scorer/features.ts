/**
 * Fixed numeric features of a (packet, patch) candidate, the input of the validation and reward
 * models: packet signal totals and counts, the env one-hot and the diagnosis; the patch as a
 * few counts over the grammar's structural groups (effects, blocks, conditions, templates) plus
 * counts per hook and the text size. Pure; same input → same vector.
 */
import { ENV_NAMES } from '../../envs/registry.ts';
import { toPatch, type Patch } from '../../harness/index.ts';
import { BLOCKS, FINDING_KINDS, engineerToken, patchToTokens, diagnose, packetNames, type Packet } from '../engineer/index.ts';

/** Bump when the vector changes; models record it and refuse a mismatch. */
export const FEATURE_VERSION = 4;

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

/** The grammar's structural tokens, grouped: a vector short enough for a few hundred training rows. */
const GROUPS: readonly { name: string; test: (t: string) => boolean }[] = [
  ...['skill', 'tool_hint', 'note', 'hint', 'block_and_prompt', 'rewrite_action', 'force_action', 'inject_hint'].map((e) => ({ name: `eff:${e}`, test: (t: string) => t === `<eff:${e}>` })),
  ...BLOCKS.map((b) => ({ name: `blk:${b.id}`, test: (t: string) => t === `<blk:${b.id}>` })),
  { name: 'cond:pred', test: (t) => t.startsWith('<pred:') },
  { name: 'cond:path', test: (t) => t.startsWith('<path:') },
  { name: 'cond:tree', test: (t) => t === '<all>' || t === '<any>' || t === '<not>' },
  { name: 'text:template', test: (t) => t.startsWith('<tpl:') },
];

/** Names of the patch part of the vector, in order. */
export const PATCH_FEATURE_NAMES: readonly string[] = [
  ...GROUPS.map((g) => `grp:${g.name}`),
  'patch:in_grammar',
  'patch:skills',
  'patch:rules',
  'patch:code',
  ...HOOKS.flatMap((h) => [`rule:${h}`, `code:${h}`]),
  'patch:components',
  'patch:log_text_chars',
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

/** The patch part: counts of the grammar's structural groups (effects, blocks, conditions, templates), whether the patch is in the grammar's space, counts per kind and hook, text size. */
export function patchFeatures(patch: unknown, names: readonly string[] = []): number[] {
  const p: Patch = toPatch(patch);
  const toks = (patchToTokens(p, names) ?? []).map((id) => engineerToken(id) ?? '');
  const grp = GROUPS.map((g) => Math.min(1, toks.filter(g.test).length / 4));
  const skills = p.skills?.length ?? 0;
  const rules = p.rules ?? [];
  const code = p.code ?? [];
  const out = [...grp, toks.length ? 1 : 0, skills / 5, rules.length / 12, code.length / 12];
  for (const h of HOOKS) out.push(rules.filter((r) => r.hook === h).length / 4, code.filter((c) => c.hook === h).length / 4);
  out.push((skills + rules.length + code.length) / 8);
  const chars = [...(p.skills ?? []), ...rules.map((r) => JSON.stringify(r.effect))].reduce((n, x) => n + x.length, 0);
  out.push(Math.log1p(chars) / 8);
  return out;
}

/** The model input: packet features ++ patch features ({@link FEATURE_DIM} numbers). */
export function candidateFeatures(packet: Packet, patch: unknown): number[] {
  return [...packetFeatures(packet), ...patchFeatures(patch, packetNames(packet))];
}
