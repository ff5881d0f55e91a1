/**
 * The failure packet s_B: a pure, deterministic digest of a batch's failed episodes, the only
 * thing an engineer reads. Same records (in any order) → byte-identical packet, text and hash.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { EpisodeRecord, StepRecord } from '../../harness/types.ts';
import { INFRA_STATUSES } from '../../harness/record.ts';
import { EngineerError } from './errors.ts';

/** Failed episodes shown at most. @default 20 */
export const DEFAULT_MAX_EPISODES = 20;
/** Characters of history excerpt per episode (the text rendering of its lines). @default 1200 */
export const DEFAULT_EXCERPT_CHARS = 1200;
/** Characters an action keeps in an excerpt. @default 120 */
export const MAX_ACTION_CHARS = 120;
/** Characters an observation keeps in an excerpt. @default 160 */
export const MAX_OBSERVATION_CHARS = 160;
/** Characters a goal keeps. @default 400 */
export const MAX_GOAL_CHARS = 400;
/** Repeated actions listed per episode. @default 3 */
export const MAX_REPEATED_LISTED = 3;
export const PACKET_VERSION = 1;
export const SELECTION_RULE = 'round robin over task types (sorted by name); within a type lowest reward first, ties by task id, then seed';

export type PacketStatus = 'failed' | 'step_limit' | 'invalid_format';

export interface PacketSignals {
  /** actions executed more than once, most frequent first (ties by text), at most 3 */
  repeatedActions: { action: string; count: number }[];
  /** the longest run of one action in consecutive steps */
  longestRun: number;
  /** observations that said nothing happened ("Nothing happens.") */
  noOps: number;
  /** model outputs that did not parse as an action */
  invalidFormats: number;
  /** SQL error observations (DBBench) */
  sqlErrors: number;
  /** clicks on something that is not on the page (WebShop) */
  invalidClicks: number;
  /** steps whose observation equals the one before */
  repeatedObservations: number;
}

/** One line of a history excerpt: a run of identical consecutive steps. */
export interface ExcerptLine {
  /** first and last step of the run (1-based, as in the record) */
  from: number;
  to: number;
  action: string;
  observation: string;
  /** letters: F forced by a hook, R rewritten, I invalid format, N nothing happened / invalid click, S SQL error */
  flags: string;
}

export interface PacketEpisode {
  /** E1, E2, … in selection order (task ids are not shown) */
  label: string;
  env: string;
  taskType: string;
  goal: string;
  status: PacketStatus;
  reward: number;
  steps: number;
  signals: PacketSignals;
  /** the excerpt: the first line, then the last lines that fit the budget */
  excerpt: ExcerptLine[];
  /** steps left out of the excerpt, in all its gaps (after the first line, around an ALFWorld sighting, before the tail) */
  omitted: number;
}

export interface Packet {
  v: 1;
  /** the envs of the batch, sorted ("alfworld") */
  env: string;
  batch: { episodes: number; won: number; failed: number; errors: number };
  rule: string;
  /** failed episodes per task type (all of the batch, not only the shown ones) */
  failedByType: Record<string, number>;
  /** shown episodes that show each signal, and its total count */
  totals: Record<keyof Omit<PacketSignals, 'repeatedActions'> | 'stepLimit' | 'repeated', { episodes: number; count: number }>;
  episodes: PacketEpisode[];
}

export interface PacketOptions {
  /** @default DEFAULT_MAX_EPISODES (20) */
  maxEpisodes?: number;
  /** @default DEFAULT_EXCERPT_CHARS (1200) */
  excerptChars?: number;
}

// ---------------------------------------------------------------- record validation

const PredSchema = z.looseObject({ nothingHappens: z.boolean(), sqlError: z.boolean(), repeatedObservation: z.boolean() });
const StepSchema = z.looseObject({
  step: z.number(),
  proposal: z.string().nullable(),
  action: z.string(),
  observation: z.string(),
  forced: z.boolean(),
  rewritten: z.boolean(),
  invalidFormat: z.boolean(),
  pred: PredSchema,
});
const RecordSchema = z.looseObject({
  env: z.string(),
  taskId: z.string(),
  seed: z.number(),
  goal: z.string(),
  taskType: z.string(),
  steps: z.array(StepSchema),
  outcome: z.looseObject({ status: z.string(), won: z.boolean(), reward: z.number(), steps: z.number(), end: z.string().nullable().optional() }),
});

function checkRecords(records: unknown): EpisodeRecord[] {
  if (!Array.isArray(records)) throw new EngineerError('ENGINEER_BAD_RECORD', 'records must be an array of episode records (rollout(...).records)', { field: 'records' });
  records.forEach((r, i) => {
    const p = RecordSchema.safeParse(r);
    if (!p.success) {
      const issue = p.error.issues[0]!;
      const field = `records[${i}]${issue.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`;
      throw new EngineerError('ENGINEER_BAD_RECORD', `${field}: ${issue.message}; an episode record is what runEpisode/rollout return`, { field });
    }
  });
  return records as EpisodeRecord[];
}

// ---------------------------------------------------------------- sanitisation

const ASIN = /\bb0[0-9a-z]{8}\b/gi;
const TRIAL = /\btrial_T\d{8}_\d{6}_\d+\b/g;
const HEX = /\b[0-9a-f]{16,}\b/gi;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;

/**
 * Replaces benchmark instance ids with placeholders: the task id itself, ALFWorld trial ids,
 * WebShop product ids (ASINs, numbered per episode in order of appearance so that references stay
 * consistent), UUIDs and long hex strings. Object numbers such as "cabinet 3" stay: they are part
 * of the actions a patch may reason about.
 */
export class Sanitizer {
  private products = new Map<string, string>();
  constructor(private readonly taskId: string) {}
  clean(text: string): string {
    let s = text;
    if (this.taskId.length >= 4) s = s.split(this.taskId).join('<task>');
    s = s.replace(TRIAL, '<trial>').replace(UUID, '<id>');
    s = s.replace(ASIN, (m) => {
      const k = m.toUpperCase();
      let v = this.products.get(k);
      if (v === undefined) {
        v = `<product-${this.products.size + 1}>`;
        this.products.set(k, v);
      }
      return v;
    });
    return s.replace(HEX, '<hex>');
  }
}

function oneLine(s: string, max: number): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length <= max ? t : `${t.slice(0, max - 1)}…`;
}

// ---------------------------------------------------------------- selection

function statusOf(r: EpisodeRecord): PacketStatus {
  const end = r.outcome.end ?? '';
  if (r.outcome.status === 'step_limit' || end === 'step_limit' || end === 'task_limit_reached') return 'step_limit';
  const last = r.steps[r.steps.length - 1];
  if (end === 'agent_validation_failed' || (last !== undefined && last.invalidFormat)) return 'invalid_format';
  return 'failed';
}

const INFRA = new Set<string>(INFRA_STATUSES);

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The deterministic selection: failed episodes (reward < 1, not an env or model error), grouped
 * by task type; types in name order; within a type lowest reward first, then task id, then seed
 * (then the record's content, so exact duplicates order the same way); round robin over the
 * types until `max` are picked.
 */
export function selectFailed(records: readonly EpisodeRecord[], max = DEFAULT_MAX_EPISODES): EpisodeRecord[] {
  const byType = new Map<string, { r: EpisodeRecord; key: string }[]>();
  for (const r of records) {
    if (r.outcome.reward >= 1 || INFRA.has(r.outcome.status)) continue;
    const list = byType.get(r.taskType) ?? [];
    list.push({ r, key: JSON.stringify(r.steps.map((s) => [s.action, s.observation])) });
    byType.set(r.taskType, list);
  }
  const types = [...byType.keys()].sort(cmp);
  const queues = types.map((t) =>
    byType.get(t)!.sort((a, b) => a.r.outcome.reward - b.r.outcome.reward || cmp(a.r.taskId, b.r.taskId) || a.r.seed - b.r.seed || cmp(a.key, b.key)).map((x) => x.r),
  );
  const out: EpisodeRecord[] = [];
  for (let round = 0; out.length < max; round++) {
    let any = false;
    for (const q of queues) {
      const r = q[round];
      if (r === undefined) continue;
      any = true;
      out.push(r);
      if (out.length >= max) break;
    }
    if (!any) break;
  }
  return out;
}

// ---------------------------------------------------------------- signals and excerpts

function signalsOf(r: EpisodeRecord, clean: (s: string) => string): PacketSignals {
  const counts = new Map<string, number>();
  let run = 0;
  let longestRun = 0;
  let prev: string | null = null;
  let noOps = 0;
  let invalidClicks = 0;
  let invalidFormats = 0;
  let sqlErrors = 0;
  let repeatedObservations = 0;
  const webshop = r.env === 'webshop';
  for (const s of r.steps) {
    const a = oneLine(clean(s.action), MAX_ACTION_CHARS);
    counts.set(a, (counts.get(a) ?? 0) + 1);
    run = a === prev ? run + 1 : 1;
    longestRun = Math.max(longestRun, run);
    prev = a;
    const noop = s.pred.nothingHappens || /^nothing happens\b/i.test(s.observation);
    if (noop && webshop) invalidClicks++;
    else if (noop) noOps++;
    if (s.invalidFormat) invalidFormats++;
    if (s.pred.sqlError) sqlErrors++;
    if (s.pred.repeatedObservation) repeatedObservations++;
  }
  const repeatedActions = [...counts.entries()]
    .filter(([, n]) => n > 1)
    .sort((x, y) => y[1] - x[1] || cmp(x[0], y[0]))
    .slice(0, MAX_REPEATED_LISTED)
    .map(([action, count]) => ({ action, count }));
  return { repeatedActions, longestRun, noOps, invalidFormats, sqlErrors, invalidClicks, repeatedObservations };
}

function flagsOf(s: StepRecord, env: string): string {
  let f = '';
  if (s.forced) f += 'F';
  if (s.rewritten) f += 'R';
  if (s.invalidFormat) f += 'I';
  if (s.pred.nothingHappens || (env !== 'webshop' && /^nothing happens\b/i.test(s.observation))) f += 'N';
  if (s.pred.sqlError) f += 'S';
  return f;
}

/** The text of one excerpt line, as the text rendering prints it. */
export function excerptLineText(l: ExcerptLine): string {
  const range = l.from === l.to ? `${l.from}` : `${l.from}-${l.to} ×${l.to - l.from + 1}`;
  const flags = l.flags ? ` {${l.flags}}` : '';
  return `  [${range}] > ${l.action} => ${l.observation}${flags}`;
}

/**
 * The kind of object an ALFWorld goal is about (`put a clean butterknife in drawer.` → `butterknife`,
 * `look at cd under the desklamp.` → `cd`), or null for a goal of another form.
 */
export function alfGoalObject(goal: string): string | null {
  const m = /^(?:your task is to:\s*)?(?:put|look at|examine|heat|cool|clean|find)\s+(?:a |an |some |two |the )?(?:clean |hot |cool |cold |heated |cooled )?([a-z]+)/i.exec(goal.trim());
  return m ? m[1]!.toLowerCase() : null;
}

/**
 * ALFWorld: the index of the first run where going to or opening a place showed an object of the
 * goal's kind (`go to drawer 5 => … you see a cd 3`), the sighting a failed episode walked past.
 */
function sightingIndex(runs: readonly ExcerptLine[], env: string, goal: string | undefined): number {
  if (env !== 'alfworld' || !goal) return -1;
  const word = alfGoalObject(goal);
  if (!word) return -1;
  const rx = new RegExp(`\\b${word} \\d+\\b`);
  return runs.findIndex((l) => /^(?:go to|open) [a-z]+ \d+$/.test(l.action) && rx.test(l.observation));
}

/** An ALFWorld goal as a rule matches it: without "Your task is to:" and the closing period. */
export function alfGoalText(goal: string): string {
  return goal.trim().replace(/^your task is to:\s*/i, '').replace(/\.\s*$/, '');
}

/**
 * Where a failed ALFWorld episode's excerpt showed an object of its goal's kind: the goal (as
 * {@link alfGoalText}), the kind, the object and the place gone to or opened; null when it did not.
 */
export function alfSighting(e: Pick<PacketEpisode, 'env' | 'goal' | 'excerpt'>): { goal: string; word: string; object: string; place: string } | null {
  const i = sightingIndex(e.excerpt, e.env, e.goal);
  if (i < 0) return null;
  const l = e.excerpt[i]!;
  const word = alfGoalObject(e.goal)!;
  return { goal: alfGoalText(e.goal), word, object: new RegExp(`\\b(${word} \\d+)\\b`).exec(l.observation)![1]!, place: /^(?:go to|open) ([a-z]+ \d+)$/.exec(l.action)![1]! };
}

/**
 * The history as runs of identical steps, trimmed to `budget` characters of text: the first line,
 * in ALFWorld the first sighting of the goal's object (when `goal` is given), then as many of the
 * last lines as fit; the last line always stays (clipped if it alone is over).
 */
export function excerptOf(steps: readonly StepRecord[], env: string, clean: (s: string) => string, budget = DEFAULT_EXCERPT_CHARS, goal?: string): { lines: ExcerptLine[]; omitted: number } {
  const runs: ExcerptLine[] = [];
  for (const s of steps) {
    const line: ExcerptLine = {
      from: s.step,
      to: s.step,
      action: oneLine(clean(s.action), MAX_ACTION_CHARS),
      observation: oneLine(clean(s.observation), MAX_OBSERVATION_CHARS) || '(empty)',
      flags: flagsOf(s, env),
    };
    const last = runs[runs.length - 1];
    if (last && last.action === line.action && last.observation === line.observation && last.flags === line.flags && last.to + 1 === line.from) last.to = line.to;
    else runs.push(line);
  }
  if (runs.length === 0) return { lines: [], omitted: 0 };
  const cost = (l: ExcerptLine): number => excerptLineText(l).length + 1;
  const total = runs.reduce((n, l) => n + cost(l), 0);
  if (total <= budget) return { lines: runs, omitted: 0 };
  const lastLine = runs[runs.length - 1]!;
  if (cost(lastLine) >= budget) {
    const room = Math.max(20, budget - (cost(lastLine) - lastLine.observation.length));
    const clipped = { ...lastLine, observation: oneLine(lastLine.observation, room) };
    return { lines: [clipped], omitted: lastLine.from - 1 };
  }
  const tail: ExcerptLine[] = [lastLine];
  let used = cost(lastLine);
  // the first line shows how the episode began; it costs its text and the "… left out …" marker
  const marker = 40;
  const head: ExcerptLine[] = [];
  if (runs.length > 1 && used + cost(runs[0]!) + marker <= budget) {
    head.push(runs[0]!);
    used += cost(runs[0]!) + marker;
    // the sighting, with its own gap marker, when it is not the first or the last line
    const s = sightingIndex(runs, env, goal);
    if (s > 0 && s < runs.length - 1 && used + cost(runs[s]!) + marker <= budget) {
      head.push(runs[s]!);
      used += cost(runs[s]!) + marker;
    }
  }
  const stop = head.length ? runs.indexOf(head[head.length - 1]!) + 1 : 0;
  for (let i = runs.length - 2; i >= stop; i--) {
    const l = runs[i]!;
    if (used + cost(l) > budget) break;
    tail.unshift(l);
    used += cost(l);
  }
  const lines = [...head, ...tail];
  const shown = lines.reduce((n, l) => n + (l.to - l.from + 1), 0);
  return { lines, omitted: Math.max(0, steps.length - shown) };
}

// ---------------------------------------------------------------- the packet

/**
 * Build the packet of a batch: a pure function of its records. The order of `records` does not
 * matter; a malformed record throws {@link EngineerError} naming the field.
 *
 * @example
 * const { records } = await rollout(cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes });
 * const packet = extractPacket(records);
 * console.log(formatPacket(packet));
 */
export function extractPacket(records: readonly EpisodeRecord[], opts: PacketOptions = {}): Packet {
  const maxEpisodes = opts.maxEpisodes ?? DEFAULT_MAX_EPISODES;
  const excerptChars = opts.excerptChars ?? DEFAULT_EXCERPT_CHARS;
  if (!Number.isInteger(maxEpisodes) || maxEpisodes < 1) throw new EngineerError('ENGINEER_BAD_OPTION', `packet.maxEpisodes must be a positive integer, got ${String(maxEpisodes)}`, { field: 'maxEpisodes' });
  if (!Number.isInteger(excerptChars) || excerptChars < 80) throw new EngineerError('ENGINEER_BAD_OPTION', `packet.excerptChars must be an integer ≥ 80, got ${String(excerptChars)}`, { field: 'excerptChars' });
  const recs = checkRecords(records);
  const envs = [...new Set(recs.map((r) => r.env))].sort(cmp);
  const errors = recs.filter((r) => INFRA.has(r.outcome.status)).length;
  const won = recs.filter((r) => r.outcome.reward >= 1).length;
  const failedAll = recs.filter((r) => r.outcome.reward < 1 && !INFRA.has(r.outcome.status));
  const failedByType: Record<string, number> = {};
  for (const t of [...new Set(failedAll.map((r) => r.taskType))].sort(cmp)) failedByType[t] = failedAll.filter((r) => r.taskType === t).length;
  const picked = selectFailed(recs, maxEpisodes);
  const episodes = picked.map((r, i): PacketEpisode => {
    const san = new Sanitizer(r.taskId);
    const clean = (s: string): string => san.clean(s);
    const goal = oneLine(clean(r.goal), MAX_GOAL_CHARS);
    const signals = signalsOf(r, clean);
    const { lines, omitted } = excerptOf(r.steps, r.env, clean, excerptChars, goal);
    return { label: `E${i + 1}`, env: r.env, taskType: r.taskType, goal, status: statusOf(r), reward: r.outcome.reward, steps: r.steps.length, signals, excerpt: lines, omitted };
  });
  const tot = (f: (e: PacketEpisode) => number): { episodes: number; count: number } => ({
    episodes: episodes.filter((e) => f(e) > 0).length,
    count: episodes.reduce((n, e) => n + f(e), 0),
  });
  const totals: Packet['totals'] = {
    repeated: tot((e) => (e.signals.longestRun >= 3 ? 1 : 0)),
    longestRun: tot((e) => (e.signals.longestRun >= 3 ? e.signals.longestRun : 0)),
    noOps: tot((e) => e.signals.noOps),
    invalidFormats: tot((e) => e.signals.invalidFormats),
    sqlErrors: tot((e) => e.signals.sqlErrors),
    invalidClicks: tot((e) => e.signals.invalidClicks),
    repeatedObservations: tot((e) => e.signals.repeatedObservations),
    stepLimit: tot((e) => (e.status === 'step_limit' ? 1 : 0)),
  };
  return { v: 1, env: envs.join(','), batch: { episodes: recs.length, won, failed: failedAll.length, errors }, rule: SELECTION_RULE, failedByType, totals, episodes };
}

// ---------------------------------------------------------------- text rendering

const STATUS_TEXT: Record<PacketStatus, string> = { failed: 'failed', step_limit: 'step limit', invalid_format: 'invalid format' };

function pct(a: number, b: number): string {
  return b === 0 ? '0.0%' : `${((100 * a) / b).toFixed(1)}%`;
}

function num(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(3).replace(/0+$/, '');
}

function episodeSignals(s: PacketSignals): string {
  const parts: string[] = [];
  if (s.repeatedActions.length > 0) parts.push(`repeated actions ${s.repeatedActions.map((r) => `"${r.action}" ×${r.count}`).join(', ')} (longest run ${s.longestRun})`);
  if (s.noOps > 0) parts.push(`no-op observations ${s.noOps}`);
  if (s.invalidFormats > 0) parts.push(`invalid formats ${s.invalidFormats}`);
  if (s.sqlErrors > 0) parts.push(`SQL errors ${s.sqlErrors}`);
  if (s.invalidClicks > 0) parts.push(`invalid clicks ${s.invalidClicks}`);
  if (s.repeatedObservations > 0) parts.push(`repeated observations ${s.repeatedObservations}`);
  return parts.length > 0 ? parts.join('; ') : 'none';
}

/**
 * The text rendering, for LLM engineers. Deterministic: the same packet gives the same bytes.
 * Flags in excerpts: F forced by a hook, R rewritten, I invalid format, N nothing happened /
 * invalid click, S SQL error.
 */
export function formatPacket(p: Packet): string {
  const n = p.episodes.length;
  const t = p.totals;
  const out: string[] = [];
  out.push(`# failure packet v${p.v}`);
  out.push(`env: ${p.env}`);
  out.push(`batch: ${p.batch.episodes} episodes, ${p.batch.won} won (${pct(p.batch.won, p.batch.episodes)}), ${p.batch.failed} failed, ${p.batch.errors} env/model errors (left out)`);
  out.push(`shown: ${n} failed episodes; selection: ${p.rule}`);
  out.push(`failed by task type: ${Object.entries(p.failedByType).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`);
  out.push(
    `signals in shown episodes (episodes/${n}, total): repeated-action runs ≥3 ${t.repeated.episodes} (longest ${Math.max(0, ...p.episodes.map((e) => e.signals.longestRun))}), no-op observations ${t.noOps.episodes} (${t.noOps.count}), invalid formats ${t.invalidFormats.episodes} (${t.invalidFormats.count}), SQL errors ${t.sqlErrors.episodes} (${t.sqlErrors.count}), invalid clicks ${t.invalidClicks.episodes} (${t.invalidClicks.count}), repeated observations ${t.repeatedObservations.episodes} (${t.repeatedObservations.count}), step limit ${t.stepLimit.episodes}`,
  );
  out.push('excerpt flags: F forced by a hook, R rewritten, I invalid format, N nothing happened / invalid click, S SQL error');
  for (const e of p.episodes) {
    out.push('');
    out.push(`## ${e.label} · ${e.taskType} · ${STATUS_TEXT[e.status]} · reward ${num(e.reward)} · ${e.steps} steps`);
    out.push(`goal: ${e.goal}`);
    out.push(`signals: ${episodeSignals(e.signals)}`);
    out.push(`history${e.omitted > 0 ? ` (excerpt, ${e.omitted} of ${e.steps} steps left out)` : ''}:`);
    e.excerpt.forEach((l, i) => {
      const gap = l.from - (i === 0 ? 1 : e.excerpt[i - 1]!.to + 1);
      if (gap > 0 && e.omitted > 0) out.push(`  … ${gap} step${gap === 1 ? '' : 's'} left out …`);
      out.push(excerptLineText(l));
    });
    if (e.excerpt.length === 0) out.push('  (no steps)');
  }
  return `${out.join('\n')}\n`;
}

/** sha256 (hex) of the packet's text rendering: names the packet in datasets and logs. */
export function packetHash(p: Packet): string {
  return createHash('sha256').update(formatPacket(p)).digest('hex');
}

// ---------------------------------------------------------------- packets as files

const SignalsSchema = z.strictObject({
  repeatedActions: z.array(z.strictObject({ action: z.string(), count: z.number().int() })),
  longestRun: z.number().int(),
  noOps: z.number().int(),
  invalidFormats: z.number().int(),
  sqlErrors: z.number().int(),
  invalidClicks: z.number().int(),
  repeatedObservations: z.number().int(),
});
const Tot = z.strictObject({ episodes: z.number().int(), count: z.number().int() });
/** The JSON form of a packet (what `hr1 packet --json` writes and `hr1 teacher --packet` reads). */
export const PacketSchema = z.strictObject({
  v: z.literal(1),
  env: z.string(),
  batch: z.strictObject({ episodes: z.number().int(), won: z.number().int(), failed: z.number().int(), errors: z.number().int() }),
  rule: z.string(),
  failedByType: z.record(z.string(), z.number().int()),
  totals: z.strictObject({ repeated: Tot, longestRun: Tot, noOps: Tot, invalidFormats: Tot, sqlErrors: Tot, invalidClicks: Tot, repeatedObservations: Tot, stepLimit: Tot }),
  episodes: z.array(
    z.strictObject({
      label: z.string(),
      env: z.string(),
      taskType: z.string(),
      goal: z.string(),
      status: z.enum(['failed', 'step_limit', 'invalid_format']),
      reward: z.number(),
      steps: z.number().int(),
      signals: SignalsSchema,
      excerpt: z.array(z.strictObject({ from: z.number().int(), to: z.number().int(), action: z.string(), observation: z.string(), flags: z.string() })),
      omitted: z.number().int(),
    }),
  ),
});

/** Check a packet read from JSON; throws {@link EngineerError} naming the first bad field. */
export function parsePacket(input: unknown): Packet {
  const r = PacketSchema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = `packet${issue.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`;
  throw new EngineerError('ENGINEER_BAD_PACKET', `${field}: ${issue.message}; a packet is the JSON that extractPacket() returns (hr1 packet --json)`, { field });
}
