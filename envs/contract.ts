/**
 * The env contract: what the harness sees of an env (a session per episode, opened by a factory),
 * what an env descriptor registers (envs/registry.ts), and the env layer's error. Pure types and
 * one error class: every env folder implements these; nothing here knows a particular env.
 */
import { Hr1Error, type Hr1ErrorFields } from '../cluster/errors.ts';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** What a session tells the harness at the start of an episode. */
export interface EnvStart {
  /** the conversation the model starts from (the benchmark's own prompt and task turn) */
  messages: ChatMessage[];
  observation: string;
  goal: string;
  taskType: string;
  /** admissible actions, where the benchmark has them */
  admissible?: readonly string[] | undefined;
}

/** What a session answers to one action. */
export interface EnvFeedback {
  observation: string;
  /** the messages the env adds to the conversation (usually one user turn with the observation) */
  messages: ChatMessage[];
  reward: number;
  done: boolean;
  /** success as the benchmark scores it (reward ≥ 1 for ALFWorld and DBBench) */
  won: boolean;
  admissible?: readonly string[] | undefined;
  /** env-specific signals the harness turns into predicates */
  signals?: { nothingHappens?: boolean; sqlError?: boolean } | undefined;
  /** why the env ended the episode, when it did */
  end?: string | undefined;
}

/** How a model output reads as an action. `ok: false` marks an invalid format. */
export interface ParsedAction {
  action: string;
  ok: boolean;
}

/**
 * One episode of one task on one env: stateful, opened by an `EnvFactory`. ALFWorld, DBBench and
 * WebShop each provide one (envs/<name>/session.ts).
 */
export interface EnvSession {
  readonly env: string;
  readonly taskId: string;
  /** the most decisions the harness makes before it stops the episode (the benchmark's step limit) */
  readonly maxSteps: number;
  reset(): Promise<EnvStart>;
  step(action: string): Promise<EnvFeedback>;
  /** read the model's text as an action (format check included) */
  parse(text: string): ParsedAction;
  /** the text a model would have written to take `action` (used when the harness rewrites or forces) */
  render(action: string): string;
  /**
   * Whether `action` is valid now although the admissible list cannot name it: a free-form action
   * such as WebShop's `search[query]` on a page with a search bar. The harness lets a patch's
   * rewrite_action / force_action play such an action (`usable`); envs without free-form actions
   * leave it out.
   */
  admits?(action: string): boolean;
  /** the next oracle action, for expert models; null when there is none */
  expert?(): Promise<string | null>;
  close(): Promise<void>;
}

/** Opens sessions of one task; `seed` is the episode seed. */
export interface EnvFactory {
  readonly env: string;
  readonly taskId: string;
  open(seed: number): EnvSession;
}

/** What env sessions need to step through a pool: a WorkerPool itself, or an EnvActor handle. */
export interface Stepper {
  run<O = unknown>(task: string, input: unknown): Promise<O>;
}

export type EnvErrorCode = 'UNKNOWN_ENV' | 'UNKNOWN_SPLIT' | 'UNKNOWN_TASK' | 'ENV_NOT_RESET' | 'ENV_BAD_OPTION' | 'ENV_EXISTS';

/** An env-layer error: an unknown env, split or task, a bad env option, a session used out of order. */
export class EnvError extends Hr1Error<EnvErrorCode> {
  constructor(code: EnvErrorCode, message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, fields);
  }
}

// ---------------------------------------------------------------- env descriptors (the registry's entries)

/** Env options that travel with a rollout request (plain data); each env reads the ones it declares. */
export interface EnvOptions {
  /** a user's own data: ALFWorld a json_2.1.1-layout dir; DBBench an AgentBench jsonl; WebShop a dir */
  data?: string | undefined;
  /** ALFWorld: react (49 steps, default) or agentbench (35 steps, AVAILABLE ACTIONS, snapping) */
  protocol?: 'react' | 'agentbench' | undefined;
  /** DBBench: sqlite (default) or mysql://… */
  db?: string | undefined;
}

/** A metric an env reports per episode: `success` (won, 0/1) or `score` (the env's reward in [0, 1]). */
export type EnvMetric = 'success' | 'score';

/** The task splits of an env and the role each plays. */
export interface EnvSplits {
  /** every split name `listTasks` accepts, for help texts and errors */
  readonly names: readonly string[];
  /** where packets, SFT data, GRPO batches and scorer data come from */
  readonly train: string;
  /** the held-out split: `hr1 eval`'s default, held-out batches of the learning bench and the scorer */
  readonly heldout: string;
  /** the splits experiments score patches on (held out from `train`) */
  readonly test: readonly string[];
}

/**
 * One env, as the rest of the project sees it: everything a table keyed by env used to hold.
 * Each env folder exports one (`envs/<name>/descriptor.ts`); envs/registry.ts lists them. What a
 * session knows (the benchmark's instructions, the action parser, admissible actions, the
 * oracle's next action) comes with the session that `session()` opens, not as copies here.
 */
export interface EnvDescriptor {
  /** the name in specs, configs, subjects and records ("alfworld") */
  readonly name: string;
  /** the name in report tables ("ALFWorld") */
  readonly title: string;
  /** the column of the env in report tables (the paper's order: ALFWorld, WebShop, DBBench) */
  readonly column: number;
  readonly splits: EnvSplits;
  /** the metrics reported per env; the first is the primary one (used in averages) */
  readonly metrics: readonly [EnvMetric, ...EnvMetric[]];
  /** a pool worker module (exports `tasks`) that EnvActor pools load; absent: the env has no worker */
  readonly worker?: string | undefined;
  /** whether `session(…, stepper)` steps through a pool of `worker` (TargetActor env threads, EnvActors) */
  readonly pooled: boolean;
  /** the most decisions of an episode under these options (the benchmark's step limit; what its sessions' `maxSteps` say) */
  maxSteps(opts: EnvOptions): number;
  /** task ids of a split, in a stable order; throws `UNKNOWN_SPLIT` naming the splits */
  listTasks(split: string, opts: EnvOptions): string[];
  /** the options a rollout of these tasks travels with, from the caller's (absent: the caller's as they are) */
  rolloutOptions?(taskIds: readonly string[], base: EnvOptions): EnvOptions;
  /** a session factory for one task; with `stepper` (and a `worker`), steps run in that pool */
  session(taskId: string, opts: EnvOptions, stepper?: Stepper): EnvFactory;
}
