import { InvalidArgumentError, Option, type Command } from 'commander';
import { parseDuration } from '../../cluster/duration.ts';
import { refuseCredentialsInUrl } from '../../cluster/address.ts';
import { TARGET_OPTION_KEYS, TARGET_SETTINGS, type TargetOptionKey } from '../../policies/targets/settings.ts';
import { CommandError } from '../commands/errors.ts';

/** `cpu=2,gpu=0` → `{cpu: 2, gpu: 0}`. */
export function parseResources(v: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of v.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([a-z][a-z0-9_]*)=(\d+(?:\.\d+)?)$/.exec(part);
    if (!m) throw new InvalidArgumentError(`"${part}" is not NAME=NUMBER; write e.g. --resources cpu=2,gpu=0`);
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

/** `zone=a,tier=gpu` → `{zone: 'a', tier: 'gpu'}`; repeatable. */
export function parseLabels(v: string, prev: Record<string, string> = {}): Record<string, string> {
  const out = { ...prev };
  for (const part of v.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([A-Za-z0-9_.-]+)=([^,=]*)$/.exec(part);
    if (!m) throw new InvalidArgumentError(`"${part}" is not KEY=VALUE; write e.g. --labels zone=a,tier=gpu`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

/** A positive integer option: a typed CommandError [BAD_OPTION] naming it otherwise (see {@link parseIntOpt}). */
export function parsePositiveInt(name: string) {
  return parseIntOpt(name, { min: 1 });
}

export function parseDurationOpt(name: string) {
  return (v: string): number => {
    try {
      return parseDuration(/^\d+(\.\d+)?$/.test(v) ? Number(v) : v);
    } catch (e) {
      throw new InvalidArgumentError(`${name}: ${(e as Error).message}`);
    }
  };
}

/**
 * A NATS address (several separated by commas). Credentials inside it (`nats://user:pass@host`)
 * are refused with a ConnectionError that shows the address redacted: commander's own message
 * would echo the password.
 */
export function parseAddress(v: string): string {
  refuseCredentialsInUrl(v);
  for (const a of v.split(',')) {
    if (!/^(nats|tls|ws|wss):\/\/[^\s/]+(:\d+)?\/?$/.test(a.trim()) && !/^[^\s/:]+:\d+$/.test(a.trim())) {
      throw new InvalidArgumentError(`"${a}" is not a NATS address; write nats://host:port (several separated by commas)`);
    }
  }
  return v;
}

/**
 * The connection options every cluster command takes. `defaultInProcess`: without `--address` the
 * command runs on the in-process transport (its help says so) instead of a private nats-server.
 */
export function addClusterOptions(cmd: Command, { address = true, defaultInProcess = false } = {}): Command {
  if (address) {
    cmd.option(
      '--address <url>',
      defaultInProcess ? 'NATS address of an existing cluster (nats://host:port, tls://host:port); without it the command runs in-process' : 'NATS address of an existing cluster (nats://host:port, tls://host:port); without it a private one is started',
      parseAddress,
    );
  }
  return cmd
    .option('--cluster <name>', 'cluster namespace (subjects hr1.<name>.…)', 'default')
    .option('--user <user>', 'NATS user (or HR1_NATS_USER)')
    .option('--pass <password>', 'NATS password (or HR1_NATS_PASS)')
    .option('--token <token>', 'NATS token (or HR1_NATS_TOKEN)')
    .option('--creds <file>', 'NATS .creds file (or HR1_NATS_CREDS)')
    .option('--tls-ca <file>', 'TLS: the CA certificate (PEM) that signed the server\'s; needed for tls:// (or HR1_NATS_TLS_CA)')
    .option('--tls-cert <file>', 'TLS: this client\'s certificate (PEM), for servers that verify clients (or HR1_NATS_TLS_CERT)')
    .option('--tls-key <file>', 'TLS: the private key (PEM) of --tls-cert (or HR1_NATS_TLS_KEY)');
}

const TLS_FLAG_ENV = { tlsCa: 'HR1_NATS_TLS_CA', tlsCert: 'HR1_NATS_TLS_CERT', tlsKey: 'HR1_NATS_TLS_KEY' } as const;

/**
 * For commands whose options go through a strict config schema that has no TLS fields (`hr1 exp …`,
 * experiments/exp/common.ts): move `--tls-*` out of the options into the HR1_NATS_TLS_* variables
 * of this process, which init() reads (a flag wins over the variable, as everywhere).
 */
export function tlsFlagsToEnv<T extends Record<string, unknown>>(o: T): T {
  const out: Record<string, unknown> = { ...o };
  for (const [k, env] of Object.entries(TLS_FLAG_ENV)) {
    const v = out[k];
    delete out[k];
    if (typeof v === 'string' && v) process.env[env] = v;
  }
  return out as T;
}

export { authOf, type ClusterCliOptions } from '../commands/runtime.ts';

// ---------------------------------------------------------------- numbers

function badNumber(name: string, rule: string, v: string): CommandError {
  return new CommandError('BAD_OPTION', `${name}: must be ${rule}, got "${v}"`, { data: { option: name, value: v } });
}

function ruleOf(kind: 'an integer' | 'a number', min: number, max: number): string {
  if (kind === 'an integer' && min === 1 && max === Infinity) return 'a positive integer';
  if (kind === 'an integer' && min === 0 && max === Infinity) return 'a non-negative integer';
  if (min > -Infinity && max < Infinity) return `${kind} in [${min}, ${max}]`;
  if (min > -Infinity) return `${kind} ≥ ${min}`;
  if (max < Infinity) return `${kind} ≤ ${max}`;
  return kind;
}

/**
 * An integer option (`--replicas 4`): a typed CommandError [BAD_OPTION] naming the option and
 * what it must be, never NaN. Thrown from the parser, it ends in the CLI's one error handler,
 * before any command starts.
 */
export function parseIntOpt(name: string, { min = -Infinity, max = Infinity }: { min?: number; max?: number } = {}) {
  return (v: string): number => {
    const n = /^\s*[+-]?\d+\s*$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw badNumber(name, ruleOf('an integer', min, max), v);
    return n;
  };
}

/** A number option (`--min-delta 0.05`): a typed error naming the option, never NaN. */
export function parseNumberOpt(name: string, { min = -Infinity, max = Infinity }: { min?: number; max?: number } = {}) {
  return (v: string): number => {
    const n = v.trim() === '' ? NaN : Number(v);
    if (!Number.isFinite(n) || n < min || n > max) throw badNumber(name, ruleOf('a number', min, max), v);
    return n;
  };
}

/** A comma-separated list of integers (`--seeds 0,1,2`), each checked as {@link parseIntOpt}. */
export function parseIntListOpt(name: string, bounds: { min?: number; max?: number } = {}) {
  const one = parseIntOpt(name, bounds);
  return (v: string): number[] => {
    const parts = v.split(',').map((x) => x.trim()).filter(Boolean);
    if (parts.length === 0) throw new CommandError('BAD_OPTION', `${name}: give at least one number, e.g. ${name} 0,1,2`);
    return parts.map((p) => {
      try {
        return one(p);
      } catch {
        throw new CommandError('BAD_OPTION', `${name}: "${p}" is not ${ruleOf('an integer', bounds.min ?? -Infinity, bounds.max ?? Infinity)}; write e.g. ${name} 0,1,2`, { data: { option: name, value: v } });
      }
    });
  };
}

// ---------------------------------------------------------------- target settings

/** The help heading of the target settings (policies/targets/options.ts; docs/TARGETS.md). */
export const TARGET_OPTIONS_HELP = 'Target settings (openai:… targets; lm/ takes --temperature and --top-p only; sim/ none; part of the episode cache key; docs/TARGETS.md):';

/** commander attribute → setting key, for the dedicated flags */
const TARGET_FLAG_KEYS: Record<string, TargetOptionKey> = {
  temperature: 'temperature',
  topP: 'topP',
  maxTokens: 'maxTokens',
  stop: 'stop',
  targetTimeout: 'timeout',
  targetRetries: 'retries',
  targetConcurrency: 'concurrency',
  tools: 'tools',
  extraBody: 'extraBody',
  stripReasoning: 'stripReasoning',
};
const FLAG_OF = new Map(TARGET_SETTINGS.map((s) => [s.key, s.flag]));

/** `\n`, `\t`, `\r`, `\\` in a --stop value are the characters they name. */
export function unescapeStop(v: string): string {
  return v.replace(/\\(n|t|r|\\)/g, (_, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c === 'r' ? '\r' : '\\'));
}

function parseExtraBody(v: string): Record<string, unknown> {
  let j: unknown;
  try {
    j = JSON.parse(v);
  } catch (e) {
    throw new CommandError('BAD_OPTION', `--extra-body: not JSON (${(e as Error).message}); write a JSON object, e.g. --extra-body '{"chat_template_kwargs":{"enable_thinking":false}}'`, { data: { option: '--extra-body' } });
  }
  if (typeof j !== 'object' || j === null || Array.isArray(j)) throw new CommandError('BAD_OPTION', `--extra-body: must be a JSON object of request body fields, got ${v}`, { data: { option: '--extra-body' } });
  return j as Record<string, unknown>;
}

function parseTargetOption(v: string, prev: string[] = []): string[] {
  if (!/^[A-Za-z][A-Za-z0-9_-]*=/.test(v)) throw new CommandError('BAD_OPTION', `--target-option: "${v}" is not KEY=VALUE; write e.g. --target-option temperature=0.2 (settings: ${TARGET_OPTION_KEYS.join(', ')})`, { data: { option: '--target-option' } });
  return [...prev, v];
}

/**
 * Add the target settings to a command (`hr1 eval`, `hr1 exp …`), under their own help
 * heading: one flag per setting, and `--target-option KEY=VALUE` (repeatable) for any of them.
 * Numbers are checked here; ranges and the target's kind by resolveTargetOptions.
 */
export function addTargetOptions(cmd: Command): Command {
  const add = (o: Option) => cmd.addOption(o.helpGroup(TARGET_OPTIONS_HELP));
  add(new Option('--temperature <x>', 'sampling temperature, 0..2 (default: the server\'s)').argParser(parseNumberOpt('--temperature')));
  add(new Option('--top-p <x>', 'nucleus sampling mass, (0, 1] (default: the server\'s)').argParser(parseNumberOpt('--top-p')));
  add(new Option('--max-tokens <n>', 'longest answer in tokens (default: the server\'s)').argParser(parseIntOpt('--max-tokens', { min: 1 })));
  add(new Option('--stop <text>', 'a stop sequence; \\n \\t \\\\ are escapes (repeatable)').argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), unescapeStop(v)]));
  add(new Option('--target-timeout <dur>', 'per-attempt timeout, ms or e.g. 30s (default: 60s)'));
  add(new Option('--target-retries <n>', 'retries after the first attempt on 429/5xx/network errors/timeouts (default: 4)').argParser(parseIntOpt('--target-retries', { min: 0 })));
  add(new Option('--target-concurrency <n>', 'requests in flight per target actor replica (default: 8)').argParser(parseIntOpt('--target-concurrency', { min: 1 })));
  add(new Option('--tools', 'function calling with the env\'s tools (dbbench) instead of plain text actions'));
  add(new Option('--no-tools', 'plain text actions (the default)'));
  add(new Option('--extra-body <json>', 'a JSON object merged into each request body, e.g. \'{"chat_template_kwargs":{"enable_thinking":false}}\'').argParser(parseExtraBody));
  add(new Option('--strip-reasoning', 'drop <think>…</think> blocks and reasoning_content before the action is parsed (the default)'));
  add(new Option('--no-strip-reasoning', 'keep the reasoning in the action text'));
  add(new Option('--target-option <key=value>', `any setting as KEY=VALUE, VALUE as JSON or text (repeatable): ${TARGET_OPTION_KEYS.join(', ')}`).argParser(parseTargetOption));
  return cmd;
}

/** The attributes {@link addTargetOptions} adds (to take them out of a command's options). */
export const TARGET_FLAG_ATTRIBUTES: readonly string[] = [...Object.keys(TARGET_FLAG_KEYS), 'targetOption'];

/**
 * The raw target settings the flags give (undefined values = not given), and how to name each
 * in messages (its flag, or `--target-option KEY`). A setting given twice is an error.
 */
export function targetFlagsOf(o: Record<string, unknown>): { raw: Record<string, unknown>; name: (key: string) => string } {
  const raw: Record<string, unknown> = {};
  const from = new Map<string, string>();
  for (const [attr, key] of Object.entries(TARGET_FLAG_KEYS)) {
    if (o[attr] === undefined) continue;
    raw[key] = o[attr];
    from.set(key, FLAG_OF.get(key) ?? `--${attr}`);
  }
  for (const kv of (o.targetOption as string[] | undefined) ?? []) {
    const eq = kv.indexOf('=');
    const given = kv.slice(0, eq);
    const key = given.includes('-') ? given.replace(/-+([a-z])/g, (_, c: string) => c.toUpperCase()) : given;
    const text = kv.slice(eq + 1);
    let value: unknown = text;
    try {
      value = JSON.parse(text);
    } catch {
      // not JSON: the text itself
    }
    if (from.has(key)) throw new CommandError('BAD_OPTION', `--target-option ${given}: ${key} is already given by ${from.get(key)}; give it once`, { data: { option: '--target-option', key } });
    raw[key] = value;
    from.set(key, `--target-option ${given}`);
  }
  return { raw, name: (k) => from.get(k) ?? `--target-option ${k}` };
}
