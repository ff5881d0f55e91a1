/**
 * The built-in engineer's output language. A patch is written as `<patch> c… <eos>`, where each
 * `c` names one component (a skill, a typed rule or a code hook) from a fixed library: every
 * component the prompted editor (the teacher) can write, for every failure kind and env. A
 * grammar admits only sequences that decode into a valid patch (no component twice, at most 5
 * skills, at most 12 rules and code hooks, at most MAX_COMPONENTS in all), so every sample parses.
 * The engineer learns which components to compose for which packet; it does not write free text.
 */
import { ENV_NAMES } from '../../envs/registry.ts';
import { Rng } from '../../cluster/rng.ts';
import { canonicalJson, toPatch, type CodeHook, type Patch, type Rule } from '../../harness/index.ts';
import { EngineerError } from './errors.ts';
import type { Packet } from './packet.ts';
import { componentsFor, type Env, type Finding } from './teacher.ts';
import { BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE, countToken, tokenId } from './tokens.ts';

export type LibraryItem = { kind: 'skill'; skill: string } | { kind: 'rule'; rule: Rule } | { kind: 'code'; code: CodeHook };

const KINDS: Finding['kind'][] = ['loop', 'noop', 'invalid_format', 'sql_error', 'invalid_click', 'step_limit', 'early_finish', 'revisit'];
// the shipped envs (not registered ones): the library and the vocabulary must not change with registrations
const ENVS: Env[] = [...ENV_NAMES, 'other'];

function keyOf(it: LibraryItem): string {
  return canonicalJson(it);
}

function buildLibrary(): LibraryItem[] {
  const seen = new Map<string, LibraryItem>();
  for (const kind of KINDS) {
    for (const env of ENVS) {
      // every phrasing: the phrase lists are short, 48 draws cover them
      for (let s = 0; s < 48; s++) {
        for (const c of componentsFor({ kind, episodes: 1, evidence: '' }, env, new Rng(s))) {
          const it: LibraryItem = c.skill !== undefined ? { kind: 'skill', skill: c.skill } : c.rule ? { kind: 'rule', rule: c.rule } : { kind: 'code', code: c.code! };
          seen.set(keyOf(it), it);
        }
      }
    }
  }
  return [...seen.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, v]) => v);
}

/** The component library, in a stable order (sorted by canonical JSON). */
export const LIBRARY: readonly LibraryItem[] = buildLibrary();
const INDEX = new Map(LIBRARY.map((it, i) => [keyOf(it), i]));

/** `<patch>` opens a completion; components follow; `<eos>` closes it. */
export const PATCH_OPEN_ID = VOCAB_SIZE;
export const COMPONENT_BASE_ID = VOCAB_SIZE + 1;
/** The engineer model's vocabulary: packet tokens, `<patch>`, one token per library component. */
export const ENGINEER_VOCAB_SIZE = COMPONENT_BASE_ID + LIBRARY.length;
export const MAX_COMPONENTS = 8;
/** Completion length bound: `<patch>`, the components, `<eos>`. */
export const MAX_COMPLETION_TOKENS = MAX_COMPONENTS + 2;
export { BOS_ID, EOS_ID, PAD_ID };

/** Tokens of a patch, or null when some part of it is not in the library. */
export function patchToTokens(patch: unknown): number[] | null {
  const p = toPatch(patch);
  const items: LibraryItem[] = [...(p.skills ?? []).map((skill) => ({ kind: 'skill' as const, skill })), ...(p.rules ?? []).map((rule) => ({ kind: 'rule' as const, rule })), ...(p.code ?? []).map((code) => ({ kind: 'code' as const, code }))];
  const ids: number[] = [];
  for (const it of items) {
    const i = INDEX.get(keyOf(it));
    if (i === undefined) return null;
    ids.push(COMPONENT_BASE_ID + i);
  }
  if (ids.length > MAX_COMPONENTS) return null;
  return [PATCH_OPEN_ID, ...ids, EOS_ID];
}

/** Decode a completion into a patch; throws on a sequence the grammar would not admit. */
export function tokensToPatch(ids: readonly number[]): Patch {
  let i = ids[0] === PATCH_OPEN_ID ? 1 : 0;
  const skills: string[] = [];
  const rules: Rule[] = [];
  const code: CodeHook[] = [];
  for (; i < ids.length; i++) {
    const id = ids[i]!;
    if (id === EOS_ID || id === PAD_ID) break;
    const it = LIBRARY[id - COMPONENT_BASE_ID];
    if (!it) throw new EngineerError('ENGINEER_BAD_TOKENS', `token ${id} at position ${i} is not a patch component (components are ${COMPONENT_BASE_ID}…${ENGINEER_VOCAB_SIZE - 1})`);
    if (it.kind === 'skill') skills.push(it.skill);
    else if (it.kind === 'rule') rules.push(it.rule);
    else code.push(it.code);
  }
  return toPatch({ description: 'built-in engineer', ...(skills.length ? { skills } : {}), ...(rules.length ? { rules } : {}), ...(code.length ? { code } : {}) });
}

/**
 * The grammar: which ids may follow `prefix` (the completion so far). First `<patch>`; then any
 * component not used yet, within the limits, or `<eos>`; after MAX_COMPONENTS only `<eos>`.
 */
export function allowedNext(prefix: readonly number[]): number[] {
  if (prefix.length === 0) return [PATCH_OPEN_ID];
  if (prefix[prefix.length - 1] === EOS_ID) return [EOS_ID];
  const used = new Set(prefix.slice(1));
  if (used.size >= MAX_COMPONENTS) return [EOS_ID];
  let skills = 0;
  let hooks = 0;
  // rule and code-hook names are unique within a patch
  const names = new Set<string>();
  for (const id of used) {
    const it = LIBRARY[id - COMPONENT_BASE_ID];
    if (it?.kind === 'skill') skills++;
    else if (it) {
      hooks++;
      const n = nameOf(it);
      if (n) names.add(n);
    }
  }
  const out = [EOS_ID];
  LIBRARY.forEach((it, i) => {
    const id = COMPONENT_BASE_ID + i;
    if (used.has(id)) return;
    if (it.kind === 'skill' ? skills >= 5 : hooks >= 12) return;
    const n = nameOf(it);
    if (n && names.has(n)) return;
    out.push(id);
  });
  return out;
}

function nameOf(it: LibraryItem): string | undefined {
  return it.kind === 'rule' ? it.rule.name : it.kind === 'code' ? it.code.name : undefined;
}

const count = countToken;

/**
 * The built-in engineer's prompt: a compact token summary of the packet (what a small model can
 * read in its context): env, batch counts, signal totals, then per episode its status and signals.
 */
export function engineerPromptTokens(p: Packet, maxTokens = 200): number[] {
  const env = tokenId(`<env:${(ENV_NAMES as readonly string[]).includes(p.env) ? p.env : 'other'}>`);
  const out = [BOS_ID, env, count(p.batch.won), count(p.batch.failed), count(p.episodes.length)];
  const t = p.totals;
  const sig: [string, { episodes: number; count: number }][] = [
    ['<sig:run>', { episodes: t.repeated.episodes, count: t.repeated.count }],
    ['<sig:noop>', t.noOps],
    ['<sig:invalid_format>', t.invalidFormats],
    ['<sig:sql_error>', t.sqlErrors],
    ['<sig:invalid_click>', t.invalidClicks],
    ['<sig:repeat_obs>', t.repeatedObservations],
    ['<status:step_limit>', t.stepLimit],
  ];
  out.push(tokenId('<sig>'));
  for (const [name, v] of sig) out.push(tokenId(name), count(v.episodes), count(v.count));
  for (const e of p.episodes) {
    if (out.length + 9 > maxTokens - 1) break;
    out.push(tokenId('<ep>'), tokenId(`<status:${e.status}>`), count(e.steps), count(e.signals.longestRun), count(e.signals.noOps), count(e.signals.invalidFormats), count(e.signals.sqlErrors), count(e.signals.invalidClicks));
  }
  out.push(EOS_ID);
  return out;
}
