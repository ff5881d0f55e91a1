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
export class EnvError extends Hr1Error {
  declare readonly code: EnvErrorCode;
  constructor(code: EnvErrorCode, message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, fields);
  }
}
