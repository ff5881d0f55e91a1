/**
 * Options: a zod schema per experiment with the defaults in it (DEFAULT_* constants), one resolve
 * step that names the option path on a bad value, and YAML config files merged under CLI options.
 */
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { canonicalJson } from '../../harness/index.ts';
import { ExpError } from './errors.ts';

function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out;
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = input;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

/**
 * Resolve options through a schema; a bad value throws `ExpError` (code `EXP_CONFIG`) whose
 * message starts with the option path, e.g. `main.test.tasks: must be a positive integer, got -1`.
 */
export function resolveOptions<S extends z.ZodType>(schema: S, input: unknown, name: string): z.output<S> {
  const r = schema.safeParse(input ?? {});
  if (r.success) return r.data;
  const lines = r.error.issues.map((i) => {
    const p = issuePath(i.path);
    const full = p ? `${name}.${p}` : name;
    const got = i.code === 'unrecognized_keys' ? '' : `, got ${describe(valueAt(input, i.path))}`;
    return { path: full, text: `${full}: ${i.message}${got}` };
  });
  const first = lines[0]!;
  throw new ExpError('EXP_CONFIG', lines.map((l) => l.text).join('; '), { path: first.path, data: { issues: lines } });
}

/** Read a YAML (or JSON) config file into plain data; a parse error names the file and line. */
export function loadConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ExpError('EXP_CONFIG_FILE', `config ${file}: cannot read it (${(e as Error).message})`, { cause: e, data: { file } });
  }
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (e) {
    throw new ExpError('EXP_CONFIG_FILE', `config ${file}: not valid YAML (${(e as Error).message.split('\n')[0]})`, { cause: e, data: { file } });
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw new ExpError('EXP_CONFIG_FILE', `config ${file}: the top level must be a mapping of options, got ${Array.isArray(data) ? 'a list' : typeof data}`, { data: { file } });
  return data as Record<string, unknown>;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Deep merge: `over` wins; undefined values in `over` are ignored; lists are replaced. */
export function mergeOptions(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    out[k] = isPlain(v) && isPlain(out[k]) ? mergeOptions(out[k] as Record<string, unknown>, v) : v;
  }
  return out;
}

/** Options from `input.config` (a YAML file), overridden by the other fields of `input`. */
export function withConfigFile(input: unknown): unknown {
  if (!isPlain(input) || typeof input.config !== 'string') return input;
  const { config, ...rest } = input;
  return mergeOptions(loadConfigFile(config), rest);
}

/** A short stable hash of a value's canonical JSON (names default run folders). */
export function configHash(x: unknown, len = 10): string {
  return createHash('sha256').update(canonicalJson(x)).digest('hex').slice(0, len);
}
