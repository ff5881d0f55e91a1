/**
 * The episode record as a strict zod schema; its types are inferred from it. The record is what
 * the runtime returns, what a TargetActor sends back, what the episode cache stores and what
 * results are computed from, so its schema is its single definition: an unknown key, a missing
 * key or a wrong type is rejected wherever a record crosses a boundary (the wire, the cache).
 *
 * Parsing a record builds a new object whose keys are in the schema's order (zod walks the shape),
 * so the key order here is part of the record's byte form: JSON.stringify and the msgpack bytes
 * in the cache follow it. Nested objects list their keys in the order the runtime builds them
 * (harness/runtime.ts); the top level keeps the order records have always had after the wire
 * (the fields the old loose wire schema named first, then the rest in the runtime's order).
 */
import { z } from 'zod';
import { HOOKS, type Json, type Notebook } from './types.ts';

function isJson(x: unknown, depth = 0): x is Json {
  if (depth > 256) return false;
  if (x === null || typeof x === 'string' || typeof x === 'boolean') return true;
  if (typeof x === 'number') return Number.isFinite(x);
  if (Array.isArray(x)) return x.every((v) => isJson(v, depth + 1));
  if (typeof x !== 'object') return false;
  const proto = Object.getPrototypeOf(x) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(x).every((v) => isJson(v, depth + 1));
}

/**
 * The per-episode notebook: a plain JSON object. Checked in place, not copied, so it comes out
 * exactly as it went in (key order, every key).
 */
export const NotebookSchema = z.custom<Notebook>((x) => typeof x === 'object' && x !== null && !Array.isArray(x) && isJson(x), { message: 'the notebook is a plain JSON object' });

export const PredicatesSchema = z.strictObject({
  /** the last two executed actions are the same */
  repeatedAction: z.boolean(),
  /** the last two observations are the same */
  repeatedObservation: z.boolean(),
  /** the last observation says nothing happened (ALFWorld "Nothing happens.") */
  nothingHappens: z.boolean(),
  /** preAction: the proposal did not parse; otherwise: the last model output did not */
  invalidFormat: z.boolean(),
  /** the last observation is an SQL error (DBBench) */
  sqlError: z.boolean(),
  /** steps left ≤ max(3, 10% of the limit) */
  stepLimitNear: z.boolean(),
  /** preAction: the proposed action equals the last executed action */
  proposedRepeatsLast: z.boolean(),
  /** preAction: admissible actions are known and the proposal is not one of them */
  proposedInadmissible: z.boolean(),
});
export type Predicates = z.infer<typeof PredicatesSchema>;

const count = z.number().int().min(0);

/** what happened when one hook entry was called, counted per entry */
export const HookCountersSchema = z.strictObject({
  /** calls made (a disabled entry is not called) */
  ran: count,
  /** returned nothing, or a condition that did not hold */
  noEffect: count,
  threw: count,
  timedOut: count,
  /** ran out of memory or stack in the sandbox */
  outOfMemory: count,
  /** returned something that is not an allowed effect (counted, ignored) */
  malformed: count,
  /** an effect cut down to the limits (long text, a hint past the first, a force past the cap, an inadmissible action) */
  clamped: count,
  hinted: count,
  blocked: count,
  rewrote: count,
  forced: count,
  /** calls skipped because the entry was disabled after repeated faults */
  skipped: count,
  /** set when the entry was turned off for the rest of the episode */
  disabled: z.boolean(),
});
export type HookCounters = z.infer<typeof HookCountersSchema>;

export const HookAccountSchema = z.strictObject({
  /** `L<layer>.<rule|code>[<i>]` or `L<layer>.<name>` */
  id: z.string(),
  layer: count,
  hook: z.enum(HOOKS),
  kind: z.enum(['rule', 'code']),
  counters: HookCountersSchema,
  /** the first few fault messages (threw, timed out, malformed), in order */
  errors: z.array(z.string()),
});
export type HookAccount = z.infer<typeof HookAccountSchema>;

export const STEP_EFFECTS = ['hint', 'block', 'rewrite', 'force', 'inject'] as const;
/** one hook effect that changed a step, with the entry that produced it (a hook account's id) */
export const StepEffectSchema = z.strictObject({
  entry: z.string(),
  effect: z.enum(STEP_EFFECTS),
  /** the hint or prompt text, or the action rewritten or forced to */
  text: z.string(),
});
export type StepEffect = z.infer<typeof StepEffectSchema>;

export const StepRecordSchema = z.strictObject({
  step: count,
  /** the model's last text for this step (null when the action was forced without asking) */
  proposal: z.string().nullable(),
  action: z.string(),
  observation: z.string(),
  reward: z.number(),
  done: z.boolean(),
  forced: z.boolean(),
  rewritten: z.boolean(),
  invalidFormat: z.boolean(),
  /** proposals blocked before this action */
  blocked: count,
  /** hint shown before the decision (preDecision) */
  hint: z.string().nullable(),
  /** hint injected after the feedback (postFeedback) */
  injected: z.string().nullable(),
  pred: PredicatesSchema,
  /** the hook effects that took hold at this step, in order (absent when none did: unpatched steps are as before) */
  effects: z.array(StepEffectSchema).optional(),
});
export type StepRecord = z.infer<typeof StepRecordSchema>;

/**
 * An episode's interventions: executed actions the model did not choose (forced or rewritten),
 * their share of the executed actions, those the cap clamped, the cap, and the hint text added by
 * hooks (preDecision hints, postFeedback injections, block prompts; in words and symbols) in all
 * and per model decision.
 */
export const InterventionsSchema = z.strictObject({
  executed: count,
  rate: z.number().min(0).max(1),
  clamped: count,
  cap: z.number().min(0).max(1),
  hintTokens: count,
  hintTokensPerDecision: z.number().min(0),
});
export type Interventions = z.infer<typeof InterventionsSchema>;

export const EPISODE_STATUSES = ['won', 'lost', 'step_limit', 'model_error', 'env_error', 'sandbox_error'] as const;
export const EpisodeStatusSchema = z.enum(EPISODE_STATUSES);
export type EpisodeStatus = z.infer<typeof EpisodeStatusSchema>;

/**
 * Statuses of an episode that ended by an infrastructure failure, not by what the target or the
 * patch did: the model backend failed (an endpoint down), the env failed (a database
 * unreachable), or a sandbox's wall-clock guard fired (an overloaded host). Such an episode is
 * never a result: never cached, never counted, never a reward; drivers run it again.
 */
export const INFRA_STATUSES: readonly EpisodeStatus[] = ['model_error', 'env_error', 'sandbox_error'];

export function isInfraStatus(s: EpisodeStatus | string): boolean {
  return s === 'model_error' || s === 'env_error' || s === 'sandbox_error';
}

export const OutcomeSchema = z.strictObject({
  status: EpisodeStatusSchema,
  won: z.boolean(),
  reward: z.number(),
  steps: count,
  end: z.string().nullable(),
  error: z.string().nullable(),
});

/** Plain data: what the failure-packet extractor reads. Identical for identical inputs. */
export const EpisodeRecordSchema = z.strictObject({
  v: z.literal(1),
  env: z.string(),
  taskId: z.string(),
  seed: z.number().int(),
  model: z.string(),
  steps: z.array(StepRecordSchema),
  outcome: OutcomeSchema,
  hooks: z.array(HookAccountSchema),
  goal: z.string(),
  taskType: z.string(),
  /** hashes of the harness layers (base first) and of their composition */
  harness: z.strictObject({ version: z.string(), layers: z.array(z.string()) }),
  skills: z.array(z.string()),
  toolHint: z.string().nullable(),
  notebook: NotebookSchema,
  /** what the patch did instead of the model (absent in records made before it was counted) */
  interventions: InterventionsSchema.optional(),
});
export type EpisodeRecord = z.infer<typeof EpisodeRecordSchema>;
