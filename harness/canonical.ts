/**
 * Canonical form and content hash of a patch, and the harness as a stack of layers
 * (base ∘ P₁ ∘ P₂ …) that patches compose onto and come off again.
 */
import { createHash } from 'node:crypto';
import { HarnessError } from './errors.ts';
import { parsePatch, type Patch } from './schema.ts';

/** bumped when the runtime's semantics change; part of every episode key */
export const HARNESS_RUNTIME_VERSION = 'hr1-harness/1';

/** JSON with keys sorted at every level and no whitespace; undefined fields dropped */
export function canonicalJson(x: unknown): string {
  if (x === null || typeof x !== 'object') return JSON.stringify(x) ?? 'null';
  if (Array.isArray(x)) return `[${x.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const o = x as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
}

export function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** a parsed patch in canonical shape: v set, empty lists dropped */
export function canonicalPatch(p: Patch): Patch {
  const out: Patch = { v: 1 };
  if (p.description) out.description = p.description;
  if (p.skills && p.skills.length > 0) out.skills = [...p.skills];
  if (p.rules && p.rules.length > 0) out.rules = p.rules.map((r) => ({ ...r }));
  if (p.code && p.code.length > 0) out.code = p.code.map((c) => ({ ...c }));
  return JSON.parse(canonicalJson(out)) as Patch;
}

/** hash (sha256 hex of the canonical JSON) of a parsed patch */
export function patchHash(p: Patch): string {
  return sha256(canonicalJson(canonicalPatch(p)));
}

/** validate anything as a patch, or throw HARNESS_BAD_PATCH with every issue in the message */
export function toPatch(input: unknown): Patch {
  const r = parsePatch(input);
  if (r.ok) return canonicalPatch(r.patch);
  const lines = r.issues.map((i) => `  ${i.path || '(patch)'}: ${i.message}`).join('\n');
  throw new HarnessError('HARNESS_BAD_PATCH', `not a valid patch; fix these fields:\n${lines}`, { issues: r.issues });
}

export interface Layer {
  hash: string;
  patch: Patch;
}
/** The base harness plus the patches composed over it, in order. */
export interface Harness {
  readonly layers: readonly Layer[];
}

export const EMPTY_PATCH: Patch = { v: 1 };

/** a harness whose base is `base` (default: the empty patch, the plain target) */
export function baseHarness(base: unknown = EMPTY_PATCH): Harness {
  const p = toPatch(base);
  return { layers: [{ hash: patchHash(p), patch: p }] };
}

/** base ∘ P: `patch` runs after every layer already in `h` */
export function composeHarness(h: Harness, patch: unknown): Harness {
  const p = toPatch(patch);
  return { layers: [...h.layers, { hash: patchHash(p), patch: p }] };
}

/** take the layer named `hash` off again (the base, layer 0, stays) */
export function removePatch(h: Harness, hash: string): Harness {
  const i = h.layers.findIndex((l, k) => k > 0 && l.hash === hash);
  if (i < 0) {
    throw new HarnessError('HARNESS_UNKNOWN_LAYER', `no patch ${hash.slice(0, 12)}… over this base; composed: ${h.layers.slice(1).map((l) => l.hash.slice(0, 12)).join(', ') || 'none'}`, { hash });
  }
  return { layers: h.layers.filter((_, k) => k !== i) };
}

/** names this harness in episode keys: the runtime version and every layer's hash */
export function harnessVersion(h: Harness): string {
  return sha256(`${HARNESS_RUNTIME_VERSION}\n${h.layers.map((l) => l.hash).join('\n')}`);
}
