/**
 * Target settings (`targetOptions`): the backend settings of a target (an endpoint's sampling,
 * timeout, retries, concurrency, tools mode, extra request fields, reasoning stripping), checked
 * against one zod schema and against the target's kind, and brought to one canonical form. The
 * canonical form travels in every RolloutSpec of the target (drivers/rollout.ts) and is part of
 * the episode cache key, so a changed setting is a cache miss; a setting left at its default is
 * dropped from it, so giving the default changes no key.
 *
 * @example
 * resolveTargetOptions('openai:http://127.0.0.1:8000/v1#qwen', { temperature: 0.2, stop: '\n', timeout: '30s' });
 * // → { temperature: 0.2, stop: ['\n'], timeout: 30000 }
 * resolveTargetOptions('sim/qwen-3b', { temperature: 0.2 });
 * // TargetOptionsError [TARGET_OPTIONS]: targetOptions.temperature: does not apply to sim targets …
 */
import { z } from 'zod';
import { parseDuration } from '../../cluster/duration.ts';
import { Hr1Error, type Hr1ErrorFields } from '../../cluster/errors.ts';
import { DEFAULT_CONCURRENCY, DEFAULT_MAX_RETRIES, DEFAULT_STRIP_REASONING, DEFAULT_TIMEOUT_MS, TARGET_OPTION_KEYS, TARGET_SETTINGS, type TargetOptionKey, type TargetOptions } from './settings.ts';
import { formatTargetSpec, parseTargetSpec, type TargetSpec } from './spec.ts';
import { TOOL_ENVS } from './tools.ts';

export { DEFAULT_STRIP_REASONING, RUNTIME_TARGET_OPTIONS, TARGET_OPTION_KEYS, TARGET_SETTINGS, type TargetOptionKey, type TargetOptions, type TargetSetting } from './settings.ts';

/** Request body fields extraBody may not set: the client sets them, or a setting does. */
export const RESERVED_BODY_FIELDS: Readonly<Record<string, string>> = {
  model: 'the model comes from the target spec (after #)',
  messages: 'the messages are the benchmark\'s',
  stream: 'requests are non-streaming',
  tools: 'use the tools setting',
  temperature: 'use the temperature setting',
  top_p: 'use the topP setting',
  max_tokens: 'use the maxTokens setting',
  stop: 'use the stop setting',
  seed: 'the episode seed is sent as seed (it keeps episodes reproducible)',
};

const SETTING = new Map(TARGET_SETTINGS.map((s) => [s.key, s]));

/** A target setting that is unknown, has a bad value, or does not apply to the target's kind. */
export class TargetOptionsError extends Hr1Error<'TARGET_OPTIONS'> {
  /** the setting (or the path of it) that is wrong */
  readonly key: string;
  readonly accepted: readonly string[];
  constructor(key: string, message: string, accepted: readonly string[], fields: Hr1ErrorFields = {}) {
    super('TARGET_OPTIONS', message, { retryable: false, ...fields, data: { key, accepted, ...fields.data } });
    this.key = key;
    this.accepted = accepted;
  }
}

const isPlain = (v: unknown): v is Record<string, unknown> => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

function isJson(v: unknown, depth = 0): boolean {
  if (depth > 32) return false;
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every((x) => isJson(x, depth + 1));
  return isPlain(v) && Object.values(v).every((x) => isJson(x, depth + 1));
}

const stopText = z.string().min(1);

/** The schema of target settings as given (before the kind check and canonical form). */
export const TargetOptionsSchema = z.strictObject({
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().gt(0).max(1).optional(),
  maxTokens: z.number().int().min(1).max(10_000_000).optional(),
  stop: z.union([stopText, z.array(stopText).min(1).max(16)]).optional(),
  timeout: z
    .union([z.number(), z.string()])
    .transform((v, ctx) => {
      try {
        const ms = parseDuration(v);
        if (ms > 0) return ms;
      } catch {
        // reported below
      }
      ctx.addIssue({ code: 'custom', message: 'bad duration' });
      return z.NEVER;
    })
    .optional(),
  retries: z.number().int().min(0).max(100).optional(),
  concurrency: z.number().int().min(1).max(4096).optional(),
  tools: z.boolean().optional(),
  extraBody: z.custom<Record<string, unknown>>((v) => isPlain(v) && isJson(v)).optional(),
  stripReasoning: z.boolean().optional(),
});

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

const camel = (k: string) => k.replace(/[-_]+([a-z])/g, (_, c: string) => c.toUpperCase());

/** How a setting is named in messages: `targetOptions.temperature` by default, a CLI flag from the CLI. */
export type SettingName = (key: string) => string;
const defaultName: SettingName = (k) => `targetOptions.${k}`;

function unknownKey(key: string, name: SettingName, extra = ''): TargetOptionsError {
  const guess = camel(key);
  const hint = guess !== key && SETTING.has(guess as TargetOptionKey) ? ` (did you mean ${guess}?)` : '';
  return new TargetOptionsError(key, `${name(key)}: unknown target setting${hint}; accepted: ${TARGET_OPTION_KEYS.join(', ')}${extra}`, TARGET_OPTION_KEYS);
}

/** The settings a kind of target takes. */
export function settingsFor(kind: TargetSpec['kind']): TargetOptionKey[] {
  return kind === 'sim' ? [] : TARGET_SETTINGS.filter((s) => (s.kinds as readonly string[]).includes(kind)).map((s) => s.key);
}

function kindNote(t: TargetSpec): string {
  if (t.kind === 'sim') return `${formatTargetSpec(t)} is a SIMULATED target: its decisions come from its profile and the episode seed, so it takes no settings`;
  if (t.kind === 'lm') return `lm targets take ${settingsFor('lm').join(', ')} only, their answer length is fixed by the zoo config`;
  return `openai targets take ${settingsFor('openai').join(', ')}`;
}

export interface ResolveTargetOptionsOptions {
  /** the envs the target will play: tools mode needs envs with function tools */
  envs?: readonly string[];
  /** how a setting is named in messages. @default key => `targetOptions.${key}` */
  name?: SettingName;
}

/**
 * Check `input` against the schema and the target's kind; returns the canonical form (stop as
 * a list, timeout in ms, defaults dropped). Throws {@link TargetOptionsError} naming the setting,
 * the rule and the accepted settings; unknown keys are refused.
 */
export function resolveTargetOptions(target: string | TargetSpec, input: unknown, o: ResolveTargetOptionsOptions = {}): TargetOptions {
  const t = typeof target === 'string' ? parseTargetSpec(target) : target;
  const name = o.name ?? defaultName;
  if (input === undefined || input === null) return {};
  const v = checkTargetOptionValues(input, name);
  const ok = settingsFor(t.kind);
  for (const k of Object.keys(v) as TargetOptionKey[]) {
    if (!ok.includes(k)) throw new TargetOptionsError(k, `${name(k)}: does not apply to ${t.kind} targets: ${kindNote(t)}; drop it`, ok, { data: { kind: t.kind, target: formatTargetSpec(t) } });
  }
  if (v.tools && o.envs) {
    const bad = o.envs.filter((e) => !TOOL_ENVS.includes(e));
    if (bad.length) throw new TargetOptionsError('tools', `${name('tools')}: ${bad.join(', ')} ${bad.length > 1 ? 'have' : 'has'} no function tools (tools mode is for ${TOOL_ENVS.join(', ')}); drop it or play ${TOOL_ENVS.join(', ')}`, TARGET_OPTION_KEYS, { data: { envs: bad } });
  }
  const out: TargetOptions = {};
  if (v.temperature !== undefined) out.temperature = v.temperature;
  if (v.topP !== undefined) out.topP = v.topP;
  if (v.maxTokens !== undefined) out.maxTokens = v.maxTokens;
  if (v.stop !== undefined) out.stop = typeof v.stop === 'string' ? [v.stop] : [...v.stop];
  if (v.timeout !== undefined && v.timeout !== DEFAULT_TIMEOUT_MS) out.timeout = v.timeout;
  if (v.retries !== undefined && v.retries !== DEFAULT_MAX_RETRIES) out.retries = v.retries;
  if (v.concurrency !== undefined && v.concurrency !== DEFAULT_CONCURRENCY) out.concurrency = v.concurrency;
  if (v.tools === true) out.tools = true;
  if (v.extraBody !== undefined && Object.keys(v.extraBody).length > 0) out.extraBody = v.extraBody;
  if (v.stripReasoning !== undefined && v.stripReasoning !== DEFAULT_STRIP_REASONING) out.stripReasoning = v.stripReasoning;
  return out;
}

/**
 * The schema check alone (known keys, each value's rule), whatever the target: for settings
 * checked before their targets are known (`hr1 exp` flags). Returns the parsed values.
 */
export function checkTargetOptionValues(input: unknown, name: SettingName = defaultName): z.output<typeof TargetOptionsSchema> {
  if (!isPlain(input)) throw new TargetOptionsError('', `${name('').replace(/\.$/, '') || 'targetOptions'}: must be a map of settings (${TARGET_OPTION_KEYS.join(', ')}), got ${describe(input)}`, TARGET_OPTION_KEYS);
  const raw = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  for (const k of Object.keys(raw)) if (!SETTING.has(k as TargetOptionKey)) throw unknownKey(k, name);
  const r = TargetOptionsSchema.safeParse(raw);
  if (!r.success) {
    const key = String(r.error.issues[0]!.path[0] ?? '') as TargetOptionKey;
    throw new TargetOptionsError(key, `${name(key)}: ${SETTING.get(key)?.rule ?? r.error.issues[0]!.message}, got ${describe(raw[key])}`, TARGET_OPTION_KEYS);
  }
  if (r.data.extraBody) {
    for (const f of Object.keys(r.data.extraBody)) {
      if (Object.hasOwn(RESERVED_BODY_FIELDS, f)) throw new TargetOptionsError('extraBody', `${name('extraBody')}: may not set "${f}" (${RESERVED_BODY_FIELDS[f]})`, TARGET_OPTION_KEYS, { data: { field: f } });
    }
  }
  return r.data;
}

/** Whether a canonical form sets nothing (the target runs with its defaults). */
export function isDefaultTargetOptions(o: TargetOptions | undefined): boolean {
  return o === undefined || Object.keys(o).length === 0;
}

/** `temperature 0.2, stop ["\n"], timeout 30000ms`: settings for a log line. */
export function describeTargetOptions(o: TargetOptions): string {
  return Object.entries(o)
    .map(([k, v]) => (k === 'timeout' ? `${k} ${String(v)}ms` : `${k} ${typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v)}`))
    .join(', ');
}

function specKey(s: string): string | undefined {
  if (!s.startsWith('sim/') && !s.startsWith('lm/') && !s.startsWith('openai:')) return undefined;
  try {
    return formatTargetSpec(parseTargetSpec(s));
  } catch {
    return undefined;
  }
}

/**
 * Settings per target from a config's `targetOptions` map: settings at its top level apply to
 * every target; an entry keyed by a target spec applies to that target, over the top-level ones.
 * Returns the canonical settings of each target that has any. `path` names the map in messages
 * (e.g. `main.targetOptions`).
 *
 * @example
 * targetOptionsByTarget(['openai:http://a/v1#m', 'openai:http://b/v1#m'], {
 *   temperature: 0, 'openai:http://b/v1#m': { temperature: 0.7 } });
 */
export function targetOptionsByTarget(targets: readonly string[], input: unknown, o: { path?: string; envs?: readonly string[]; flags?: boolean } = {}): Map<string, TargetOptions> {
  const path = o.path ?? 'targetOptions';
  const out = new Map<string, TargetOptions>();
  if (input === undefined || input === null) return out;
  if (!isPlain(input)) throw new TargetOptionsError('', `${path}: must be a map of settings (${TARGET_OPTION_KEYS.join(', ')}) and of target specs to such maps, got ${describe(input)}`, TARGET_OPTION_KEYS);
  const global: Record<string, unknown> = {};
  const per = new Map<string, { key: string; value: Record<string, unknown> }>();
  const known = new Map(targets.map((t) => [specKey(t) ?? t, t]));
  for (const [k, v] of Object.entries(input)) {
    if (SETTING.has(k as TargetOptionKey)) {
      global[k] = v;
      continue;
    }
    const sk = specKey(k);
    if (sk === undefined) throw unknownKey(k, (x) => `${path}.${x}`, ' (or a target spec of this run, with its own settings under it)');
    if (!known.has(sk)) throw new TargetOptionsError(k, `${path}["${k}"]: not a target of this run; its targets: ${targets.join(', ')}`, targets);
    if (!isPlain(v)) throw new TargetOptionsError(k, `${path}["${k}"]: must be a map of settings (${TARGET_OPTION_KEYS.join(', ')}), got ${describe(v)}`, TARGET_OPTION_KEYS);
    per.set(sk, { key: k, value: v });
  }
  for (const t of targets) {
    const own = per.get(specKey(t) ?? t);
    const merged = { ...global, ...(own?.value ?? {}) };
    // a top-level setting may have come from a flag (`hr1 exp … --temperature`): name both
    const top: SettingName = (k) => (o.flags && SETTING.has(k as TargetOptionKey) ? `${path}.${k} (or ${SETTING.get(k as TargetOptionKey)!.flag})` : `${path}.${k}`);
    const name: SettingName = (k) => (own && Object.hasOwn(own.value, k) ? `${path}["${own.key}"].${k}` : top(k));
    const r = resolveTargetOptions(t, merged, { ...(o.envs ? { envs: o.envs } : {}), name });
    if (!isDefaultTargetOptions(r)) out.set(t, r);
  }
  return out;
}
