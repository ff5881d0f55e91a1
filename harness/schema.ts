/**
 * The patch language: a zod schema for `{skills?, rules?, code?}`, with limits as named constants.
 *
 * @example
 * {
 *   "skills": ["Open a closed receptacle before you look for objects in it."],
 *   "rules": [{
 *     "hook": "preAction",
 *     "when": {"all": [{"pred": "proposedRepeatsLast"}, {"pred": "nothingHappens"}]},
 *     "effect": {"type": "block_and_prompt", "message": "'{{proposed.action}}' did nothing last time; try another action."}
 *   }],
 *   "code": [{"hook": "postFeedback", "source": "function hook(ctx, nb) { nb.n = (nb.n || 0) + 1; return null; }"}]
 * }
 */
import { z } from 'zod';
import { CTX_ROOTS, EFFECTS_BY_HOOK, HOOKS, PREDICATES, type HookName, type Json } from './types.ts';

/** rules and code hooks together, at most @default 12 */
export const MAX_ENTRIES = 12;
/** @default 5 */
export const MAX_SKILLS = 5;
/** @default 2000 */
export const MAX_SKILL_CHARS = 2000;
/** characters of a code hook's source, @default 8000 */
export const MAX_SOURCE_CHARS = 8000;
/** hint, block and tool-hint texts, @default 2000 */
export const MAX_MESSAGE_CHARS = 2000;
/** an action from rewrite_action / force_action, @default 300 */
export const MAX_ACTION_CHARS = 300;
/** nodes in one condition tree, @default 64 */
export const MAX_COND_NODES = 64;
/** nesting of all/any/not, @default 8 */
export const MAX_COND_DEPTH = 8;
/** a `matches` pattern, @default 200 */
export const MAX_PATTERN_CHARS = 200;
/** serialised size of one note value, and of the whole notebook ×8, @default 4000 */
export const MAX_NOTE_CHARS = 4000;

// ---------------------------------------------------------------- conditions

export type Comparison = 'equals' | 'contains' | 'matches' | 'gt' | 'gte' | 'lt' | 'lte';
export const COMPARISONS = ['equals', 'contains', 'matches', 'gt', 'gte', 'lt', 'lte'] as const satisfies readonly Comparison[];

/** A condition tree over ctx paths and predicates. */
export type Cond =
  | { all: Cond[] }
  | { any: Cond[] }
  | { not: Cond }
  | { pred: (typeof PREDICATES)[number] }
  | { path: string; equals: Json }
  | { path: string; contains: string }
  | { path: string; matches: string; flags?: 'i' | '' }
  | { path: string; gt: number }
  | { path: string; gte: number }
  | { path: string; lt: number }
  | { path: string; lte: number };

const PATH_SEGMENT = /^(?:[A-Za-z_][A-Za-z0-9_]{0,63}|-?\d{1,4})$/;

/** checks a ctx path (`last.observation`, `history.-1.action`, `nb.visits`); returns an error or null */
export function checkPath(path: string): string | null {
  if (path.length === 0 || path.length > 200) return 'a path is 1 to 200 characters';
  const segs = path.split('.');
  if (segs.length > 8) return 'a path has at most 8 segments';
  const root = segs[0] ?? '';
  if (root !== 'nb' && !(CTX_ROOTS as readonly string[]).includes(root)) {
    return `unknown ctx root '${root}'; use one of ${[...CTX_ROOTS, 'nb'].join(', ')}`;
  }
  for (const s of segs) {
    if (!PATH_SEGMENT.test(s)) return `bad path segment '${s}'; use names ([A-Za-z_]\\w*) or indexes (-1 = last)`;
    if (s === '__proto__' || s === 'constructor' || s === 'prototype') return `path segment '${s}' is not allowed`;
  }
  return null;
}

type Issue = { path: (string | number)[]; message: string };

function isPlain(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function checkCond(c: unknown, path: (string | number)[], depth: number, count: { n: number }, out: Issue[]): void {
  count.n++;
  if (count.n > MAX_COND_NODES) {
    if (count.n === MAX_COND_NODES + 1) out.push({ path, message: `a condition has at most ${MAX_COND_NODES} nodes; split the rule` });
    return;
  }
  if (depth > MAX_COND_DEPTH) {
    out.push({ path, message: `conditions nest at most ${MAX_COND_DEPTH} deep; flatten all/any` });
    return;
  }
  if (!isPlain(c)) {
    out.push({ path, message: 'a condition is an object: {all}, {any}, {not}, {pred} or {path, <comparison>}' });
    return;
  }
  const keys = Object.keys(c);
  if ('all' in c || 'any' in c) {
    const k = 'all' in c ? 'all' : 'any';
    if (keys.length !== 1) out.push({ path, message: `{${k}: [...]} takes no other keys (found ${keys.join(', ')})` });
    const list = c[k];
    if (!Array.isArray(list) || list.length === 0) {
      out.push({ path: [...path, k], message: `${k} needs a non-empty array of conditions` });
      return;
    }
    list.forEach((x, i) => checkCond(x, [...path, k, i], depth + 1, count, out));
    return;
  }
  if ('not' in c) {
    if (keys.length !== 1) out.push({ path, message: `{not: {...}} takes no other keys (found ${keys.join(', ')})` });
    checkCond(c.not, [...path, 'not'], depth + 1, count, out);
    return;
  }
  if ('pred' in c) {
    if (keys.length !== 1) out.push({ path, message: `{pred: name} takes no other keys (found ${keys.join(', ')})` });
    if (typeof c.pred !== 'string' || !(PREDICATES as readonly string[]).includes(c.pred)) {
      out.push({ path: [...path, 'pred'], message: `unknown predicate ${JSON.stringify(c.pred)}; use one of ${PREDICATES.join(', ')}` });
    }
    return;
  }
  if ('path' in c) {
    if (typeof c.path !== 'string') out.push({ path: [...path, 'path'], message: 'path is a string such as "last.observation"' });
    else {
      const e = checkPath(c.path);
      if (e) out.push({ path: [...path, 'path'], message: e });
    }
    const ops = keys.filter((k) => k !== 'path' && k !== 'flags');
    const extra = ops.filter((k) => !(COMPARISONS as readonly string[]).includes(k));
    if (extra.length > 0) out.push({ path, message: `unknown key(s) ${extra.join(', ')}; a comparison is one of ${COMPARISONS.join(', ')}` });
    const known = ops.filter((k) => (COMPARISONS as readonly string[]).includes(k));
    if (known.length !== 1) {
      out.push({ path, message: `{path} takes exactly one comparison (${COMPARISONS.join(', ')}); found ${known.length}` });
      return;
    }
    const op = known[0] as Comparison;
    const v = c[op];
    if ('flags' in c && op !== 'matches') out.push({ path: [...path, 'flags'], message: 'flags go with matches only' });
    if (op === 'equals') {
      if (!isJson(v, 0)) out.push({ path: [...path, op], message: 'equals takes a JSON value' });
    } else if (op === 'contains') {
      if (typeof v !== 'string' || v.length === 0 || v.length > MAX_MESSAGE_CHARS) out.push({ path: [...path, op], message: `contains takes a non-empty string (≤ ${MAX_MESSAGE_CHARS} chars)` });
    } else if (op === 'matches') {
      if (typeof v !== 'string' || v.length === 0 || v.length > MAX_PATTERN_CHARS) {
        out.push({ path: [...path, op], message: `matches takes a regular expression of 1 to ${MAX_PATTERN_CHARS} characters` });
      } else {
        const flags = c.flags ?? '';
        if (flags !== '' && flags !== 'i') out.push({ path: [...path, 'flags'], message: 'flags is "i" or ""' });
        try {
          new RegExp(v, typeof flags === 'string' ? flags.replace(/[^i]/g, '') : '');
        } catch (e) {
          out.push({ path: [...path, op], message: `invalid regular expression: ${(e as Error).message}` });
        }
      }
    } else if (typeof v !== 'number' || !Number.isFinite(v)) {
      out.push({ path: [...path, op], message: `${op} takes a finite number` });
    }
    return;
  }
  out.push({ path, message: `a condition has one of all, any, not, pred, path (found ${keys.join(', ') || 'no keys'})` });
}

function isJson(v: unknown, depth: number): v is Json {
  if (depth > 16) return false;
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every((x) => isJson(x, depth + 1));
  if (isPlain(v)) return Object.values(v).every((x) => isJson(x, depth + 1));
  return false;
}

export const CondSchema: z.ZodType<Cond> = z.custom<Cond>(() => true).superRefine((c, ctx) => {
  const out: Issue[] = [];
  checkCond(c, [], 1, { n: 0 }, out);
  for (const i of out) ctx.addIssue({ code: 'custom', path: i.path, message: i.message });
});

// ---------------------------------------------------------------- effects

const message = z.string().min(1, 'a message is a non-empty string').max(MAX_MESSAGE_CHARS, `a message has at most ${MAX_MESSAGE_CHARS} characters`);
const action = z.string().min(1, 'an action is a non-empty string').max(MAX_ACTION_CHARS, `an action has at most ${MAX_ACTION_CHARS} characters`);
const noteKey = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'a note key is an identifier ([A-Za-z_]\\w*, ≤ 64 chars)');
const jsonValue = z.custom<Json>((v) => isJson(v, 0) && JSON.stringify(v).length <= MAX_NOTE_CHARS, {
  message: `a note value is JSON of at most ${MAX_NOTE_CHARS} characters`,
});

export const EffectSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('skill'), text: z.string().min(1).max(MAX_SKILL_CHARS) }),
  z.strictObject({ type: z.literal('tool_hint'), text: message }),
  z.strictObject({ type: z.literal('note'), key: noteKey, value: jsonValue }),
  z.strictObject({ type: z.literal('hint'), message }),
  z.strictObject({ type: z.literal('block_and_prompt'), message }),
  z.strictObject({ type: z.literal('rewrite_action'), action }),
  z.strictObject({ type: z.literal('force_action'), action }),
  z.strictObject({ type: z.literal('inject_hint'), message }),
], { error: () => `an effect is {type, ...} with type one of ${[...new Set(Object.values(EFFECTS_BY_HOOK).flat())].join(', ')}` });

const hook = z.enum(HOOKS, { error: () => `hook is one of ${HOOKS.join(', ')}` });
const name = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a name is 1 to 64 characters of [A-Za-z0-9_.-]');

export const RuleSchema = z
  .strictObject({ name: name.optional(), hook, when: CondSchema.optional(), effect: EffectSchema })
  .superRefine((r, ctx) => {
    const allowed: readonly string[] = EFFECTS_BY_HOOK[r.hook as HookName];
    if (!allowed.includes(r.effect.type)) {
      ctx.addIssue({ code: 'custom', path: ['effect', 'type'], message: `${r.hook} may return ${allowed.join(', ')}, not ${r.effect.type}` });
    }
  });

export const CodeHookSchema = z.strictObject({
  name: name.optional(),
  hook,
  source: z
    .string()
    .min(1, 'source is the text of `function hook(ctx, nb) { ... }`')
    .max(MAX_SOURCE_CHARS, `source has at most ${MAX_SOURCE_CHARS} characters`)
    .refine((s) => /\bfunction\s+hook\s*\(/.test(s), 'source must define `function hook(ctx, nb) { ... }`'),
});

export const PatchSchema = z
  .strictObject({
    v: z.literal(1).optional(),
    description: z.string().max(500).optional(),
    skills: z.array(z.string().min(1, 'a skill is a non-empty string').max(MAX_SKILL_CHARS, `a skill has at most ${MAX_SKILL_CHARS} characters`)).max(MAX_SKILLS, `at most ${MAX_SKILLS} skills`).optional(),
    rules: z.array(RuleSchema).optional(),
    code: z.array(CodeHookSchema).optional(),
  })
  .superRefine((p, ctx) => {
    const n = (p.rules?.length ?? 0) + (p.code?.length ?? 0);
    if (n > MAX_ENTRIES) {
      ctx.addIssue({ code: 'custom', path: [], message: `a patch has at most ${MAX_ENTRIES} rules and code hooks together (found ${n}); merge or drop some` });
    }
  });

export type Rule = z.infer<typeof RuleSchema>;
export type CodeHook = z.infer<typeof CodeHookSchema>;
export type Patch = z.infer<typeof PatchSchema>;

/** one problem with a patch, for the validator's report */
export interface PatchIssue {
  /** stable kind: schema, json, compile, smoke */
  code: 'PATCH_SCHEMA' | 'PATCH_JSON' | 'PATCH_COMPILE' | 'PATCH_SMOKE' | 'PATCH_NOT_FOUND';
  /** field path such as `rules[2].when.all[0].path` ('' for the whole patch) */
  path: string;
  /** the hook involved, where one is */
  hook?: HookName | undefined;
  message: string;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : s === '' ? String(p) : `.${String(p)}`;
  return s;
}

/** parse a patch; issues carry field paths and the hook of the entry they sit in */
export function parsePatch(input: unknown): { ok: true; patch: Patch } | { ok: false; issues: PatchIssue[] } {
  const r = PatchSchema.safeParse(input);
  if (r.success) return { ok: true, patch: r.data };
  const issues: PatchIssue[] = r.error.issues.map((i) => {
    const hookOf = entryHook(input, i.path);
    return { code: 'PATCH_SCHEMA', path: formatPath(i.path), hook: hookOf, message: i.message };
  });
  return { ok: false, issues };
}

function entryHook(input: unknown, path: readonly PropertyKey[]): HookName | undefined {
  const [list, idx] = path;
  if ((list !== 'rules' && list !== 'code') || typeof idx !== 'number' || !isPlain(input)) return undefined;
  const arr = input[list];
  if (!Array.isArray(arr)) return undefined;
  const e: unknown = arr[idx];
  const h = isPlain(e) ? e.hook : undefined;
  return typeof h === 'string' && (HOOKS as readonly string[]).includes(h) ? (h as HookName) : undefined;
}
