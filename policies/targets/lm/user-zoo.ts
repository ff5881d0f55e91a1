/**
 * A user's own zoo entries: a YAML file of configs in the built-in zoo's schema (`zoo.ts`
 * ZooConfig), checked with option paths in every error, then built and cached by config hash
 * like the built-in ones and usable as `lm/<name>` wherever a target goes.
 *
 * ```yaml
 * zoo:
 *   - { name: my-alf, envs: [alfworld], dModel: 96, nLayers: 2, nHeads: 4, dFf: 256, maxLen: 256, episodes: 400, steps: 800, seed: 7 }
 *   - { name: my-alf-ft, base: my-alf, envs: [alfworld], episodes: 400, steps: 400, seed: 8 }
 * ```
 *
 * `hr1 zoo build|list|table --config FILE`, elsewhere `HR1_ZOO_CONFIG=FILE` (every node of a
 * cluster needs the same file).
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import { LmTargetError } from './errors.ts';
import type { ZooConfig } from './zoo.ts';

/** The variable naming a user's zoo file. */
export const ZOO_CONFIG_ENV = 'HR1_ZOO_CONFIG';

const int = (min: number, max: number) => z.number().int().min(min).max(max);

const Sizes = { dModel: int(8, 1024), nLayers: int(1, 24), nHeads: int(1, 64), dFf: int(8, 16384) };

const shape = {
    name: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes (it becomes lm/<name>)').max(64),
    envs: z.array(z.enum(['alfworld', 'webshop', 'dbbench'])).min(1),
    dModel: Sizes.dModel.optional(),
    nLayers: Sizes.nLayers.optional(),
    nHeads: Sizes.nHeads.optional(),
    dFf: Sizes.dFf.optional(),
    maxLen: int(64, 2048).optional(),
    episodes: int(1, 1_000_000),
    steps: int(0, 10_000_000),
    batch: int(1, 4096).optional(),
    lr: z.number().positive().max(1).optional(),
    noise: z.number().min(0).max(1).optional(),
    hintRate: z.number().min(0).max(1).optional(),
    slots: z.union([z.boolean(), z.literal('values')]).optional(),
    teacher: z.enum(['explorer', 'oracle']).optional(),
    seed: z.number().int(),
    temperature: z.number().min(0).max(2).optional(),
    maxNewTokens: int(1, 512).optional(),
    elide: int(0, 64).optional(),
    compactRoom: z.boolean().optional(),
    rope: z.boolean().optional(),
    tokenShift: z.boolean().optional(),
    query: z.enum(['content', 'span']).optional(),
    synthGoals: int(0, 1_000_000).optional(),
    rename: z.number().min(0).max(1).optional(),
    phrasing: z.enum(['base', 'wide', 'mined']).optional(),
    insertColumns: z.literal('mention').optional(),
    searchOrder: z.enum(['up', 'down']).optional(),
    renumber: z.number().min(0).max(1).optional(),
    dagger: int(1, 1_000_000).optional(),
    base: z.string().optional(),
    kind: z.literal('sketch').optional(),
    note: z.string().optional(),
};

const Entry = z
  .strictObject(shape)
  .superRefine((e, ctx) => {
    if (e.base === undefined) {
      for (const k of ['dModel', 'nLayers', 'nHeads', 'dFf', 'maxLen'] as const) if (e[k] === undefined) ctx.addIssue({ code: 'custom', path: [k], message: 'is required (only an entry with a base takes its sizes from the base)' });
    }
    if (e.dModel !== undefined && e.nHeads !== undefined && e.dModel % e.nHeads !== 0) ctx.addIssue({ code: 'custom', path: ['nHeads'], message: `must divide dModel (${e.dModel}): ${e.nHeads} heads cannot split ${e.dModel} features` });
    if (e.maxLen !== undefined && e.maxNewTokens !== undefined && e.maxNewTokens > e.maxLen / 2) ctx.addIssue({ code: 'custom', path: ['maxNewTokens'], message: `must be at most half the context (maxLen ${e.maxLen}): the window needs room for the prompt` });
    if (e.compactRoom && !e.envs.includes('alfworld')) ctx.addIssue({ code: 'custom', path: ['compactRoom'], message: 'the compact room listing is for ALFWorld; add alfworld to envs or drop compactRoom' });
    if (e.query !== undefined && !e.envs.includes('webshop')) ctx.addIssue({ code: 'custom', path: ['query'], message: "the shopper's query style is for WebShop; add webshop to envs or drop query" });
    if (e.phrasing !== undefined && !e.envs.includes('dbbench')) ctx.addIssue({ code: 'custom', path: ['phrasing'], message: "the synthetic tasks' phrasing is for DBBench; add dbbench to envs or drop phrasing" });
    if (e.kind === 'sketch' && (e.envs.length !== 1 || e.envs[0] !== 'dbbench')) ctx.addIssue({ code: 'custom', path: ['kind'], message: "a sketch parser plays DBBench only; set envs to [dbbench] or drop kind" });
    if (e.kind === 'sketch' && e.base !== undefined) ctx.addIssue({ code: 'custom', path: ['base'], message: 'a sketch parser is trained from scratch; drop base (fine-tuned variants are for decoders)' });
    if (e.insertColumns !== undefined && !e.envs.includes('dbbench')) ctx.addIssue({ code: 'custom', path: ['insertColumns'], message: "how synthetic INSERTs name their columns is for DBBench; add dbbench to envs or drop insertColumns" });
    if (e.searchOrder !== undefined && !e.envs.includes('alfworld')) ctx.addIssue({ code: 'custom', path: ['searchOrder'], message: "the explorer's search order is for ALFWorld; add alfworld to envs or drop searchOrder" });
    if (e.dagger !== undefined && e.base === undefined) ctx.addIssue({ code: 'custom', path: ['dagger'], message: 'DAgger episodes are played by a base model; add a base (a built entry to train further) or drop dagger' });
    if (e.slots === 'values' && !e.envs.includes('dbbench')) ctx.addIssue({ code: 'custom', path: ['slots'], message: "'values' slots are DBBench's (values from the question); add dbbench to envs or use slots: true" });
    else if (e.slots && !e.envs.includes('webshop') && !e.envs.includes('dbbench')) ctx.addIssue({ code: 'custom', path: ['slots'], message: "slots are for WebShop's product ids and DBBench's table and column names; add webshop or dbbench to envs or drop slots" });
  });

const File = z.union([z.strictObject({ zoo: z.array(z.unknown()).min(1) }), z.array(z.unknown()).min(1)]);

const bad = (path: string, message: string, data: Record<string, unknown> = {}): LmTargetError => new LmTargetError('LM_BAD_CONFIG', `${path}: ${message}`, { data: { file: path, ...data } });

/**
 * The entries of a zoo file's text, checked. `builtIn`: the built-in zoo (a user entry may not
 * reuse one of its names; a `base` may name one of its entries). Errors are LM_BAD_CONFIG naming
 * the file, the entry and the field: `my.yaml: zoo[1] (my-alf-ft).base: "nope" is not in the zoo`.
 */
export function parseZooConfig(text: string, path: string, builtIn: readonly ZooConfig[]): ZooConfig[] {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw bad(path, `not YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  const f = File.safeParse(doc);
  if (!f.success) throw bad(path, 'a zoo file is `zoo: [entries]` (or a list of entries), each entry a config like the built-in zoo\'s (docs/LMTARGETS.md)');
  const raw = Array.isArray(f.data) ? f.data : f.data.zoo;
  const out: ZooConfig[] = [];
  const names = new Map<string, number>();
  raw.forEach((x, i) => {
    const label = `zoo[${i}]${x && typeof x === 'object' && typeof (x as { name?: unknown }).name === 'string' ? ` (${(x as { name: string }).name})` : ''}`;
    const r = Entry.safeParse(x);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      const field = issue.path.length ? `.${issue.path.join('.')}` : '';
      const msg = issue.code === 'unrecognized_keys' ? `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')} (known: ${Object.keys(shape).join(', ')})` : issue.message;
      throw bad(path, `${label}${field}: ${msg}`, { entry: i, field: issue.path.join('.') });
    }
    const e = r.data;
    if (builtIn.some((b) => b.name === e.name)) throw bad(path, `${label}.name: "${e.name}" is a built-in zoo entry; give yours another name`, { entry: i, field: 'name' });
    if (names.has(e.name)) throw bad(path, `${label}.name: "${e.name}" is also zoo[${names.get(e.name)}]`, { entry: i, field: 'name' });
    names.set(e.name, i);
    out.push(e as ZooConfig);
  });
  // bases: in the file or built in, and no cycles; an entry with a base takes its sizes from it
  const all = [...builtIn, ...out];
  out.forEach((e, i) => {
    if (e.base === undefined) return;
    const seen = new Set([e.name]);
    let b: ZooConfig | undefined = e;
    while (b?.base !== undefined) {
      const next: ZooConfig | undefined = all.find((x) => x.name === b!.base);
      if (!next) throw bad(path, `zoo[${i}] (${e.name}).base: "${b.base}" is not in the zoo nor in this file`, { entry: i, field: 'base' });
      if (seen.has(next.name)) throw bad(path, `zoo[${i}] (${e.name}).base: the bases go round in a circle (${[...seen, next.name].join(' → ')})`, { entry: i, field: 'base' });
      seen.add(next.name);
      b = next;
    }
    const root = b!;
    for (const k of ['dModel', 'nLayers', 'nHeads', 'dFf', 'maxLen'] as const) {
      if (e[k] !== undefined && e[k] !== root[k]) throw bad(path, `zoo[${i}] (${e.name}).${k}: ${e[k]} differs from its base's ${root[k]} (an entry trained further from a base keeps the base's sizes); drop it`, { entry: i, field: k });
      (e as unknown as Record<string, unknown>)[k] = root[k];
    }
    for (const k of ['rope', 'tokenShift'] as const) {
      if (e[k] !== undefined && e[k] !== (root[k] ?? false)) throw bad(path, `zoo[${i}] (${e.name}).${k}: ${e[k]} differs from its base's ${root[k] ?? false} (the architecture is part of the base's weights); drop it`, { entry: i, field: k });
    }
  });
  return out;
}

/** The entries of a zoo file (see {@link parseZooConfig}); LM_BAD_CONFIG when it cannot be read. */
export function loadZooConfig(path: string, builtIn: readonly ZooConfig[]): ZooConfig[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw bad(path, `cannot read the zoo file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); check the path given to --config or ${ZOO_CONFIG_ENV}`);
  }
  return parseZooConfig(text, path, builtIn);
}
