/**
 * The target settings' table (keys, CLI flags, defaults, the kinds that take them), without the
 * schema or any client: small enough for the CLI to read at start-up. The checks are in
 * options.ts; the client defaults are used by openai.ts.
 */

/** @default 8 requests in flight per client */
export const DEFAULT_CONCURRENCY = 8;
/** @default 4 retries after the first attempt (5 attempts in all) */
export const DEFAULT_MAX_RETRIES = 4;
/** @default 60 s per attempt (connect, wait, read the body) */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** Canonical target settings (what makeModel takes, and what keys the episode cache). */
export interface TargetOptions {
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  /** always a list in the canonical form */
  stop?: string[];
  /** per-attempt timeout, ms */
  timeout?: number;
  retries?: number;
  concurrency?: number;
  tools?: boolean;
  extraBody?: Record<string, unknown>;
  stripReasoning?: boolean;
}
export type TargetOptionKey = keyof TargetOptions;

/** @default true: `<think>…</think>` blocks and `reasoning_content` never reach the env's parser */
export const DEFAULT_STRIP_REASONING = true;

/** One setting: its key, CLI flag, default, meaning and the target kinds that take it. */
export interface TargetSetting {
  key: TargetOptionKey;
  flag: string;
  /** what it is sent as, or what it does */
  wire: string;
  default: string;
  what: string;
  kinds: readonly ('openai' | 'lm')[];
  /** the value's rule, used in error messages */
  rule: string;
}

/** Every target setting, in the order docs and --help list them. */
export const TARGET_SETTINGS: readonly TargetSetting[] = [
  { key: 'temperature', flag: '--temperature', wire: 'temperature', default: "the server's (lm: the zoo config's)", what: 'sampling temperature', kinds: ['openai', 'lm'], rule: 'must be a number in [0, 2]' },
  { key: 'topP', flag: '--top-p', wire: 'top_p', default: "the server's (lm: 0.95)", what: 'nucleus sampling mass', kinds: ['openai', 'lm'], rule: 'must be a number in (0, 1]' },
  { key: 'maxTokens', flag: '--max-tokens', wire: 'max_tokens', default: "the server's", what: 'longest answer, in tokens', kinds: ['openai'], rule: 'must be a positive integer' },
  { key: 'stop', flag: '--stop', wire: 'stop', default: 'none', what: 'stop sequences (a string or a list)', kinds: ['openai'], rule: 'must be a non-empty string or a list of 1 to 16 non-empty strings' },
  { key: 'timeout', flag: '--target-timeout', wire: 'per-attempt timeout', default: `${DEFAULT_TIMEOUT_MS / 1000}s`, what: 'connect, wait and read one answer', kinds: ['openai'], rule: 'must be a positive duration: ms as a number or a string like "30s"' },
  { key: 'retries', flag: '--target-retries', wire: 'retries after the first attempt', default: String(DEFAULT_MAX_RETRIES), what: 'on 429, 5xx, network errors and timeouts', kinds: ['openai'], rule: 'must be an integer in 0..100' },
  { key: 'concurrency', flag: '--target-concurrency', wire: 'requests in flight', default: String(DEFAULT_CONCURRENCY), what: 'per target actor replica', kinds: ['openai'], rule: 'must be an integer in 1..4096' },
  { key: 'tools', flag: '--tools', wire: 'tools, tool_choice: auto', default: 'false (plain text actions)', what: "function calling with the env's tools (dbbench)", kinds: ['openai'], rule: 'must be true or false' },
  { key: 'extraBody', flag: '--extra-body', wire: 'merged into the request body', default: '{}', what: 'server-specific fields, e.g. {"chat_template_kwargs":{"enable_thinking":false}}', kinds: ['openai'], rule: 'must be a JSON object' },
  { key: 'stripReasoning', flag: '--strip-reasoning', wire: 'drop <think>…</think> and reasoning_content', default: String(DEFAULT_STRIP_REASONING), what: 'reasoning never reaches the action parser', kinds: ['openai'], rule: 'must be true or false' },
];

/** The accepted keys, in order. */
export const TARGET_OPTION_KEYS: readonly TargetOptionKey[] = TARGET_SETTINGS.map((s) => s.key);

/**
 * Settings that say how requests are made, not what the model is asked: they change no answer
 * of a working server. They are still part of the cache key today (drivers/rollout.ts keys the
 * whole targetOptions); a driver may leave these out of the episode key.
 */
export const RUNTIME_TARGET_OPTIONS: readonly TargetOptionKey[] = ['timeout', 'retries', 'concurrency'];

