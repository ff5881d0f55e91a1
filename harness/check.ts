/**
 * The patch validator: schema, compile in the sandbox, a smoke episode; a report that names the
 * field path, the hook and the sandbox's error for every problem.
 */
import { readFileSync } from 'node:fs';
import { loadGames, type Game } from '../envs/alfworld/index.ts';
import { alfworldEnv } from '../envs/alfworld/session.ts';
import { baseHarness, composeHarness, readPatch } from './canonical.ts';
import { HarnessError, errorText } from './errors.ts';
import { expertModel } from './models.ts';
import { runEpisode } from './runtime.ts';
import { CodeSandbox, type SandboxLimits } from './sandbox.ts';
import type { Patch, PatchIssue } from './schema.ts';
import type { EpisodeRecord, HookAccount, Model } from './types.ts';
import { isInfraStatus } from './record.ts';

/** the ALFWorld game smoke episodes run on unless told otherwise (valid_seen, pick_and_place) */
export const DEFAULT_SMOKE_GAME = 'valid_seen/pick_and_place_simple-Book-None-SideTable-329/trial_T20190908_050633_745514';
/** decisions in a smoke episode, @default 30 */
export const DEFAULT_SMOKE_STEPS = 30;

export interface ValidateOptions {
  /** run a smoke episode, @default true */
  smoke?: boolean;
  /** the game (or its id) for the smoke episode, @default DEFAULT_SMOKE_GAME */
  game?: Game | string;
  /** @default expertModel() */
  model?: Model;
  /** @default DEFAULT_SMOKE_STEPS */
  maxSteps?: number;
  /** @default 0 */
  seed?: number;
  sandbox?: Partial<SandboxLimits>;
}

export interface ValidationReport {
  ok: boolean;
  /** sha256 of the canonical JSON, when the schema passed */
  hash: string | null;
  canonical: string | null;
  errors: PatchIssue[];
  /** clamped effects and other things that do not make the patch invalid */
  warnings: PatchIssue[];
  smoke: { game: string; base: EpisodeRecord['outcome']; patched: EpisodeRecord['outcome']; hooks: HookAccount[] } | null;
  /** the human-readable report */
  report: string;
}

function entryPaths(p: Patch): Map<string, { path: string; hook: PatchIssue['hook'] }> {
  const m = new Map<string, { path: string; hook: PatchIssue['hook'] }>();
  (p.rules ?? []).forEach((r, i) => m.set(`L1.${r.name ?? `rule[${i}]`}`, { path: `rules[${i}]`, hook: r.hook }));
  (p.code ?? []).forEach((c, i) => m.set(`L1.${c.name ?? `code[${i}]`}`, { path: `code[${i}]`, hook: c.hook }));
  return m;
}

function resolveGame(g: Game | string | undefined): Game {
  if (g && typeof g !== 'string') return g;
  return loadGames().get(g ?? DEFAULT_SMOKE_GAME);
}

/** validate anything as a patch; never throws for what the patch contains */
export async function validatePatch(input: unknown, opts: ValidateOptions = {}): Promise<ValidationReport> {
  const errors: PatchIssue[] = [];
  const warnings: PatchIssue[] = [];
  const read = readPatch(input);
  if (!read.ok) return finish({ ok: false, hash: null, canonical: null, errors: read.issues, warnings, smoke: null });
  const { patch, hash, canonical } = read.parsed;
  const seen = new Set<string>();
  for (const [i, c] of (patch.code ?? []).entries()) {
    const id = c.name ?? `code[${i}]`;
    if (seen.has(id)) errors.push({ code: 'PATCH_SCHEMA', path: `code[${i}].name`, hook: c.hook, message: `name '${id}' is used twice; names must be unique` });
    seen.add(id);
    const r = await CodeSandbox.compile(c.source, { limits: opts.sandbox ?? {} });
    if (r.ok) r.sandbox?.dispose();
    else errors.push({ code: 'PATCH_COMPILE', path: `code[${i}].source`, hook: c.hook, message: r.error ?? 'does not compile' });
  }
  for (const [i, r] of (patch.rules ?? []).entries()) {
    const id = r.name ?? `rule[${i}]`;
    if (seen.has(id)) errors.push({ code: 'PATCH_SCHEMA', path: `rules[${i}].name`, hook: r.hook, message: `name '${id}' is used twice; names must be unique` });
    seen.add(id);
  }
  let smoke: ValidationReport['smoke'] = null;
  if (errors.length === 0 && opts.smoke !== false) {
    try {
      const game = resolveGame(opts.game);
      const run = (h: ReturnType<typeof baseHarness>): Promise<EpisodeRecord> =>
        runEpisode(alfworldEnv(game), { model: opts.model ?? expertModel(), harness: h, seed: opts.seed ?? 0, maxSteps: opts.maxSteps ?? DEFAULT_SMOKE_STEPS, ...(opts.sandbox ? { sandbox: opts.sandbox } : {}) });
      const base = await run(baseHarness());
      const rec = await run(composeHarness(baseHarness(), patch));
      const layer1 = rec.hooks.filter((h) => h.layer === 1);
      smoke = { game: game.id, base: base.outcome, patched: rec.outcome, hooks: layer1 };
      const where = entryPaths(patch);
      for (const h of layer1) {
        const w = where.get(h.id) ?? { path: h.id, hook: h.hook };
        const c = h.counters;
        const faults = c.threw + c.timedOut + c.outOfMemory + c.malformed;
        if (faults > 0) {
          const kinds = [c.threw && `threw ${c.threw}×`, c.timedOut && `timed out ${c.timedOut}×`, c.outOfMemory && `out of memory/stack ${c.outOfMemory}×`, c.malformed && `returned malformed effects ${c.malformed}×`].filter(Boolean).join(', ');
          errors.push({ code: 'PATCH_SMOKE', path: w.path, hook: w.hook, message: `in the smoke episode it ${kinds}: ${h.errors[0] ?? ''}` });
        } else if (c.clamped > 0) {
          warnings.push({ code: 'PATCH_SMOKE', path: w.path, hook: w.hook, message: `${c.clamped} effect(s) clamped in the smoke episode (cut to the limits, past the first hint, past a cap, or not admissible)${h.errors[0] ? `: ${h.errors[0]}` : ''}` });
        }
      }
      if (isInfraStatus(rec.outcome.status)) {
        errors.push({ code: 'PATCH_SMOKE', path: '', message: `the smoke episode failed: ${rec.outcome.error ?? rec.outcome.status}` });
      }
    } catch (e) {
      errors.push({ code: 'PATCH_SMOKE', path: '', message: `the smoke episode could not run: ${errorText(e)}` });
    }
  }
  return finish({ ok: errors.length === 0, hash, canonical, errors, warnings, smoke });
}

function finish(r: Omit<ValidationReport, 'report'>): ValidationReport {
  const line = (i: PatchIssue): string => `  ${i.path || '(patch)'}${i.hook ? ` [${i.hook}]` : ''}: ${i.message}`;
  const out: string[] = [];
  const name = r.hash ? `patch ${r.hash.slice(0, 16)}` : 'patch';
  out.push(r.ok ? `${name}: OK` : `${name}: INVALID (${r.errors.length} problem${r.errors.length === 1 ? '' : 's'})`);
  for (const e of r.errors) out.push(line(e));
  if (r.warnings.length > 0) out.push('warnings:', ...r.warnings.map(line));
  if (r.smoke) {
    const o = (x: EpisodeRecord['outcome']): string => `${x.status} in ${x.steps} steps`;
    out.push(`smoke: ${r.smoke.game}, expert model: patched ${o(r.smoke.patched)} (base ${o(r.smoke.base)})`);
    for (const h of r.smoke.hooks) {
      const c = h.counters;
      const parts = Object.entries(c).filter(([k, v]) => k !== 'disabled' && v !== 0).map(([k, v]) => `${k} ${String(v)}`);
      out.push(`  ${h.id} [${h.hook}, ${h.kind}]: ${parts.join(', ') || 'not called'}${c.disabled ? ', disabled' : ''}`);
    }
  }
  if (r.hash) out.push(`hash: ${r.hash}`);
  return { ...r, report: out.join('\n') };
}

function readJson(path: string): { ok: true; value: unknown } | { ok: false; issue: PatchIssue } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    return { ok: false, issue: { code: 'PATCH_NOT_FOUND', path: '', message: `cannot read ${path}: ${errorText(e)}; pass the path of a patch JSON file` } };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (e) {
    const m = /position (\d+)/.exec((e as Error).message);
    let where = '';
    if (m) {
      const pos = Number(m[1]);
      const before = text.slice(0, pos).split('\n');
      where = ` at line ${before.length}, column ${(before[before.length - 1]?.length ?? 0) + 1}`;
    }
    return { ok: false, issue: { code: 'PATCH_JSON', path: '', message: `${path} is not JSON${where}: ${(e as Error).message}` } };
  }
}

/**
 * `hr1 patch check FILE`: validate a patch file (schema, sandbox compile, smoke episode).
 *
 * @example
 * const { ok, report } = await checkPatchFile('patch.json'); console.log(report); process.exitCode = ok ? 0 : 1;
 */
export async function checkPatchFile(path: string, opts: ValidateOptions = {}): Promise<{ ok: boolean; report: string; errors: PatchIssue[]; hash: string | null }> {
  const j = readJson(path);
  if (!j.ok) {
    const r = finish({ ok: false, hash: null, canonical: null, errors: [j.issue], warnings: [], smoke: null });
    return { ok: false, report: r.report, errors: r.errors, hash: null };
  }
  const r = await validatePatch(j.value, opts);
  return { ok: r.ok, report: r.report, errors: r.errors, hash: r.hash };
}

/**
 * `hr1 patch show FILE`: the canonical JSON and the content hash. Throws HarnessError
 * (HARNESS_PATCH_NOT_FOUND, HARNESS_BAD_JSON, HARNESS_BAD_PATCH) with the fix in the message.
 */
export function showPatchFile(path: string): { canonical: string; hash: string } {
  const j = readJson(path);
  if (!j.ok) throw new HarnessError(j.issue.code === 'PATCH_JSON' ? 'HARNESS_BAD_JSON' : 'HARNESS_PATCH_NOT_FOUND', j.issue.message, { path });
  const p = readPatch(j.value);
  if (!p.ok) {
    throw new HarnessError('HARNESS_BAD_PATCH', `${path} is not a valid patch; fix these fields (hr1 patch check ${path} says more):\n${p.issues.map((i) => `  ${i.path || '(patch)'}: ${i.message}`).join('\n')}`, { path, issues: p.issues });
  }
  return { canonical: p.parsed.canonical, hash: p.parsed.hash };
}
