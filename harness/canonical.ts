/**
 * Canonical form and content hash of a patch, and the harness as a stack of layers
 * (base ∘ P₁ ∘ P₂ …) that patches compose onto and come off again.
 */
import { createHash } from 'node:crypto';
import { HarnessError } from './errors.ts';
import { parsePatch, type Patch, type PatchIssue } from './schema.ts';

/** bumped when the runtime's semantics change; part of every episode key */
// 3: WebShop's goal is the instruction (it was the session name), which hooks read as ctx.task.goal
// 4: a rewrite or force may play a free-form action the env admits (WebShop's search[query])
export const HARNESS_RUNTIME_VERSION = 'hr1-harness/4';

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

// v set, empty lists dropped (keys are sorted by canonicalJson)
function canonicalShape(p: Patch): Patch {
  const out: Patch = { v: 1 };
  if (p.description) out.description = p.description;
  if (p.skills && p.skills.length > 0) out.skills = [...p.skills];
  if (p.rules && p.rules.length > 0) out.rules = p.rules.map((r) => ({ ...r }));
  if (p.code && p.code.length > 0) out.code = p.code.map((c) => ({ ...c }));
  return out;
}

/** a parsed patch in canonical shape: v set, empty lists dropped */
export function canonicalPatch(p: Patch): Patch {
  return JSON.parse(canonicalJson(canonicalShape(p))) as Patch;
}

/** hash (sha256 hex of the canonical JSON) of a parsed patch */
export function patchHash(p: Patch): string {
  return sha256(canonicalJson(canonicalShape(p)));
}

function badPatch(issues: readonly PatchIssue[]): never {
  const lines = issues.map((i) => `  ${i.path || '(patch)'}: ${i.message}`).join('\n');
  throw new HarnessError('HARNESS_BAD_PATCH', `not a valid patch; fix these fields:\n${lines}`, { issues });
}

/** validate anything as a patch, or throw HARNESS_BAD_PATCH with every issue in the message */
export function toPatch(input: unknown): Patch {
  return parsedPatch(input).patch;
}

/**
 * A patch validated once: the patch in canonical shape (what {@link toPatch} returns), its
 * canonical JSON and its hash (what {@link patchHash} returns). Made only by
 * {@link parsedPatch} and {@link patchFromCanonical}; treat it as immutable. It travels from the
 * runner through the rollout driver to the TargetActor, which gets `{canonical, hash}` on the
 * wire, so a unit's patch is parsed and canonicalised once on each side.
 */
export interface ParsedPatch {
  readonly patch: Patch;
  readonly canonical: string;
  readonly hash: string;
}

const madeHere = new WeakSet<object>();

function fromCanonical(canonical: string, hash: string, patch: Patch = JSON.parse(canonical) as Patch): ParsedPatch {
  const pp: ParsedPatch = Object.freeze({ patch, canonical, hash });
  madeHere.add(pp);
  return pp;
}

/** whether `x` is a {@link ParsedPatch} made in this process (so already validated) */
export function isParsedPatch(x: unknown): x is ParsedPatch {
  return typeof x === 'object' && x !== null && madeHere.has(x);
}

/**
 * Validate anything as a patch, once: a ParsedPatch comes back as it is; anything else is
 * parsed and canonicalised, or HARNESS_BAD_PATCH is thrown with every issue (as {@link toPatch}).
 */
export function parsedPatch(input: unknown): ParsedPatch {
  const r = readPatch(input);
  return r.ok ? r.parsed : badPatch(r.issues);
}

/**
 * The one validate-and-canonicalise step, without throwing: a ParsedPatch comes back as it is;
 * anything else is parsed (every issue listed when it is not a patch) and canonicalised.
 */
export function readPatch(input: unknown): { ok: true; parsed: ParsedPatch } | { ok: false; issues: PatchIssue[] } {
  if (isParsedPatch(input)) return { ok: true, parsed: input };
  const r = parsePatch(input);
  if (!r.ok) return { ok: false, issues: r.issues };
  const canonical = canonicalJson(canonicalShape(r.patch));
  return { ok: true, parsed: fromCanonical(canonical, sha256(canonical)) };
}

/**
 * A patch received as canonical text and hash (from another process): the hash must be the
 * text's, the text a valid patch in canonical form; otherwise HARNESS_BAD_PATCH.
 */
export function patchFromCanonical(canonical: string, hash: string): ParsedPatch {
  if (sha256(canonical) !== hash) {
    throw new HarnessError('HARNESS_BAD_PATCH', `the patch's hash ${hash.slice(0, 12)}… is not the hash of its canonical text; send parsedPatch(p).canonical with its .hash`, { hash });
  }
  let json: unknown;
  try {
    json = JSON.parse(canonical);
  } catch (e) {
    throw new HarnessError('HARNESS_BAD_PATCH', `the patch's canonical text is not JSON (${(e as Error).message})`, { hash });
  }
  const r = parsePatch(json);
  if (!r.ok) return badPatch(r.issues);
  if (canonicalJson(canonicalShape(r.patch)) !== canonical) {
    throw new HarnessError('HARNESS_BAD_PATCH', `the patch ${hash.slice(0, 12)}… is not in canonical form; send parsedPatch(p).canonical`, { hash });
  }
  // the text is canonical, so its parse is the patch in canonical shape
  return fromCanonical(canonical, hash, json as Patch);
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
  const p = parsedPatch(base);
  return { layers: [{ hash: p.hash, patch: p.patch }] };
}

/** base ∘ P: `patch` (anything, or a ParsedPatch, not parsed again) runs after every layer already in `h` */
export function composeHarness(h: Harness, patch: unknown): Harness {
  const p = parsedPatch(patch);
  return { layers: [...h.layers, { hash: p.hash, patch: p.patch }] };
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
