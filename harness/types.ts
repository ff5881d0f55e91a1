/**
 * The harness contracts: what an env session, a model and a hook see and return, and the episode
 * record (whose types come from its schema in record.ts). Implementations live in runtime.ts,
 * sandbox.ts and rules.ts; the env side of the contract (sessions, factories) is envs/contract.ts.
 */

/** the four lifecycle hooks (reference names: on_init, make_pre_hint, on_before_action, on_post_step) */
export const HOOKS = ['init', 'preDecision', 'preAction', 'postFeedback'] as const;
export type HookName = (typeof HOOKS)[number];

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export type { ChatMessage, EnvStart, EnvFeedback, ParsedAction, EnvSession, EnvFactory } from '../envs/contract.ts';
import type { ChatMessage, EnvSession } from '../envs/contract.ts';
export type { Predicates, HookCounters, HookAccount, StepRecord, StepEffect, EpisodeStatus, EpisodeRecord } from './record.ts';
import type { Predicates } from './record.ts';

// ---------------------------------------------------------------- model

/** What the model sees at a decision: the messages, hints included. */
export interface DecisionContext {
  readonly messages: readonly ChatMessage[];
  readonly step: number;
  readonly env: string;
  readonly taskId: string;
  /** the live session, for expert and scripted models that need the env's oracle */
  readonly session: EnvSession;
  /** the episode seed (sampling models and SIMULATED targets draw from it) */
  readonly seed: number;
}

export interface Model {
  readonly name: string;
  decide(context: DecisionContext): Promise<string>;
}

// ---------------------------------------------------------------- hook context

export interface HistoryEntry {
  step: number;
  action: string;
  observation: string;
  reward: number;
  /** the action came from a hook (force_action), not from the model */
  forced: boolean;
  /** the model proposed something else and a hook rewrote it */
  rewritten: boolean;
  invalidFormat: boolean;
}

export const PREDICATES = [
  'repeatedAction',
  'repeatedObservation',
  'nothingHappens',
  'invalidFormat',
  'sqlError',
  'stepLimitNear',
  'proposedRepeatsLast',
  'proposedInadmissible',
] as const satisfies readonly (keyof Predicates)[];
export type PredicateName = (typeof PREDICATES)[number];

/** The read-only view a hook gets (deeply frozen; plain JSON). */
export interface HookCtx {
  hook: HookName;
  env: string;
  task: { id: string; goal: string; type: string };
  seed: number;
  /** decisions made so far (0 before the first) */
  step: number;
  limits: { maxSteps: number; stepsLeft: number; historyWindow: number };
  /** the last `limits.historyWindow` steps, oldest first */
  history: HistoryEntry[];
  last: { action: string; observation: string } | null;
  observation: string;
  /** preAction: what the model proposed */
  proposed: { text: string; action: string } | null;
  admissible: string[] | null;
  pred: Predicates;
  /** how many times this step's proposal was blocked so far */
  blocks: number;
  skills: string[];
}
/** top-level ctx keys a rule path may start with (plus `nb`) */
export const CTX_ROOTS = [
  'hook', 'env', 'task', 'seed', 'step', 'limits', 'history', 'last', 'observation', 'proposed', 'admissible', 'pred', 'blocks', 'skills',
] as const satisfies readonly (keyof HookCtx)[];

/** the per-episode notebook: hooks may write it; JSON only */
export type Notebook = { [k: string]: Json };

// ---------------------------------------------------------------- effects

export type InitEffect =
  | { type: 'skill'; text: string }
  | { type: 'tool_hint'; text: string }
  | { type: 'note'; key: string; value: Json };
export type PreDecisionEffect = { type: 'hint'; message: string };
export type PreActionEffect =
  | { type: 'block_and_prompt'; message: string }
  | { type: 'rewrite_action'; action: string }
  | { type: 'force_action'; action: string };
export type PostFeedbackEffect = { type: 'inject_hint'; message: string } | { type: 'force_action'; action: string };
export type Effect = InitEffect | PreDecisionEffect | PreActionEffect | PostFeedbackEffect;

/** effect types each hook may return */
export const EFFECTS_BY_HOOK = {
  init: ['skill', 'tool_hint', 'note'],
  preDecision: ['hint'],
  preAction: ['block_and_prompt', 'rewrite_action', 'force_action'],
  postFeedback: ['inject_hint', 'force_action'],
} as const satisfies Record<HookName, readonly Effect['type'][]>;

// ---------------------------------------------------------------- accounting and the record

// the record's types come from its schema (record.ts): HookCounters, HookAccount, StepRecord,
// EpisodeStatus, EpisodeRecord, and Predicates (also part of the hook ctx)
