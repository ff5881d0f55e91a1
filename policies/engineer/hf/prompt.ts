/**
 * The prompt of a Hugging Face-layout engineer: a system message (the task and a compact account
 * of the patch language) and a user message (the packet's text rendering, `formatPacket`, then
 * the packet's names with the `<ref:k>` tokens that copy them), the checkpoint's chat template
 * applied (tokenizer.ts), encoded.
 *
 * **The length rule** (`hfPromptIds`, `maxTokens` ids in all): when the whole prompt is longer,
 * only the packet's text is shortened, never the system message, the names, or the template's
 * parts (its generation prompt last): first whole failed episodes are dropped from the end of the
 * rendering (the packet's own selection order puts the most telling first), a line saying how
 * many were left out in their place, keeping at least one; then, if one episode is still too
 * long, lines are cut from the end of what is left, a line saying so in their place. When even
 * the packet's text cut to nothing does not fit, ENGINEER_BAD_OPTION (field `maxTokens`).
 */
import { EFFECTS_BY_HOOK, HOOKS } from '../../../harness/index.ts';
import { BLOCKS } from '../blocks.ts';
import { EngineerError } from '../errors.ts';
import { formatPacket, type Packet } from '../packet.ts';
import { ARRAY_PATHS, NAMES, NOTE_KEYS, NUMBER_PATHS, PHRASES, STRING_PATHS, STRUCTURE_TOKENS, packetNames } from '../patch-lang.ts';
import type { ChatTurn, HfTokenizer } from './tokenizer.ts';

/** Prompt ids of an hf engineer, chat template included. @default 2048 */
export const DEFAULT_HF_PROMPT_TOKENS = 2048;
/** Phrases listed one by one in the system message up to this many; above, only their number and an example. */
const PHRASES_LISTED = 12;

/** the names of the structure tokens `<kind:name>` of one kind, space-separated */
const namesOf = (kind: string): string =>
  STRUCTURE_TOKENS.filter((t) => t.startsWith(`<${kind}:`))
    .map((t) => t.slice(kind.length + 2, -1))
    .join(' ');

function phraseLine(): string {
  const n = PHRASES.length;
  if (n <= PHRASES_LISTED) return `phrases: ${PHRASES.map((p, i) => `<ph:${i}> "${p}"`).join(' ')}`;
  return `phrases: ${n}, <ph:0> … <ph:${n - 1}>, stock sentences such as <ph:0> "${PHRASES[0]}"`;
}

/**
 * The system message: the task, the grammar in four lines, then one line per group of tokens
 * (named without their `<kind:…>` wrapper: `<hook:init>` is listed as `init` under H).
 */
export const HF_SYSTEM_PROMPT = [
  'You edit the harness of a frozen LLM agent (skills, rules, code hooks; the model stays as it is) so that it fails less, from the failure packet the user shows.',
  'Answer with one patch in the patch language: one token per line, <patch> first, then the items; end with the end token.',
  'item := <skill> TEXT <end> | <rule> [<name:N>] <hook:H> [<when> COND] <eff:E> TEXT <end> | <code> [<name:N>] <hook:H> (<blk:B> <n:k>…)+ <end>',
  'COND := <pred:P> | <path:S> <op:O> TEXT <end> | <path:C> <op:equals|gt|gte|lt|lte> <n:k> | <path:A> <op:contains> TEXT <end> | <all> COND… <endc> | <any> COND… <endc> | <not> COND',
  'TEXT: words, numbers, symbols; <w> #a… spells a word; <cap>/<upper> capitalise; <glue>/<space> spacing; <ref:k> a packet name; <ph:k> a phrase; <tpl:S> {{S}}; <rx:…> in patterns',
  `H (E): ${HOOKS.map((h) => `${h} (${EFFECTS_BY_HOOK[h].join(' ')})`).join(', ')}; <eff:note> <key:K> then <true>|<false>|<null>|<n:k>|TEXT <end>`,
  `P: ${namesOf('pred')}`,
  `S: ${STRING_PATHS.join(' ')}`,
  `C: ${NUMBER_PATHS.join(' ')}`,
  `A: ${ARRAY_PATHS.join(' ')}`,
  `O: ${namesOf('op').split(' ').filter((o) => ['equals', 'contains', 'matches', 'imatches'].includes(o)).join(' ')}`,
  `N: ${NAMES.join(' ')}`,
  `K: ${NOTE_KEYS.join(' ')}`,
  `B: ${namesOf('blk')
    .split(' ')
    .map((id) => `${id}${'+'.repeat(BLOCKS.find((x) => x.id === id)?.params.length ?? 0)}`)
    .join(' ')} (+: takes <n:k>, the k-th choice of a parameter)`,
  phraseLine(),
].join('\n');

function namesText(p: Packet): string {
  const names = packetNames(p);
  if (names.length === 0) return 'names: none (no <ref:k> tokens)';
  return ['names (<ref:k> copies the name):', ...names.map((n, k) => `<ref:${k}> = ${n}`)].join('\n');
}

function messages(packetText: string, names: string): ChatTurn[] {
  return [
    { role: 'system', content: HF_SYSTEM_PROMPT },
    { role: 'user', content: `${packetText.trimEnd()}\n\n${names}` },
  ];
}

/** The chat messages of an hf engineer for a packet (whole; `hfPromptIds` shortens the packet's text to a budget). */
export function hfEngineerMessages(packet: Packet): ChatTurn[] {
  return messages(formatPacket(packet), namesText(packet));
}

/** the rendering's header lines and its episodes' blocks (each from its blank line to the next) */
function splitRendering(text: string): { head: string[]; episodes: string[][] } {
  const lines = text.replace(/\n$/, '').split('\n');
  const head: string[] = [];
  const episodes: string[][] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l === '' && lines[i + 1]?.startsWith('## ')) episodes.push([l]);
    else if (episodes.length) episodes[episodes.length - 1]!.push(l);
    else head.push(l);
  }
  return { head, episodes };
}

/**
 * The prompt ids (chat template applied, generation prompt added) of a packet within `maxTokens`
 * (module comment: the length rule). Deterministic.
 */
export function hfPromptIds(tok: Pick<HfTokenizer, 'encode' | 'chat'>, packet: Packet, maxTokens = DEFAULT_HF_PROMPT_TOKENS): number[] {
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new EngineerError('ENGINEER_BAD_OPTION', `maxTokens must be a positive integer, got ${maxTokens}`, { field: 'maxTokens' });
  const names = namesText(packet);
  const enc = (packetText: string): number[] => tok.encode(tok.chat(messages(packetText, names)));
  const text = formatPacket(packet);
  const full = enc(text);
  if (full.length <= maxTokens) return full;

  const { head, episodes } = splitRendering(text);
  const n = episodes.length;
  const withEpisodes = (k: number): string => [...head, ...episodes.slice(0, k).flat(), ...(k < n ? ['', `(${n - k} more failed episode${n - k === 1 ? '' : 's'} left out to fit the prompt)`] : [])].join('\n');
  // 1. whole episodes from the end: estimate with each block's own length, then check
  if (n > 1) {
    const r = largestFitting(1, n - 1, full.length - maxTokens, (k) => tok.encode(`${episodes[k]!.join('\n')}\n`).length, (k) => enc(withEpisodes(k)), maxTokens);
    if (r) return r;
  }
  // 2. lines from the end of what is left (the header and one episode)
  const lines = [...head, ...(episodes[0] ?? [])];
  const rest = n > 1 ? [`(${n - 1} more failed episode${n - 1 === 1 ? '' : 's'} left out to fit the prompt)`] : [];
  const withLines = (l: number): string => [...lines.slice(0, l), `… (the rest of ${n > 0 ? 'this episode' : 'the packet'} is cut to fit the prompt)`, ...rest].join('\n');
  const base = enc(withLines(lines.length));
  if (base.length <= maxTokens) return base;
  const r = largestFitting(0, lines.length - 1, base.length - maxTokens, (l) => tok.encode(`${lines[l]!}\n`).length, (l) => enc(withLines(l)), maxTokens);
  if (r) return r;
  throw new EngineerError('ENGINEER_BAD_OPTION', `maxTokens ${maxTokens} is too small for this engineer's prompt: the system message, the packet's ${packetNames(packet).length} names and the chat template take ${enc('').length} ids without any of the packet; raise maxTokens (hf.promptTokens)`, { field: 'maxTokens' });
}

/**
 * The ids of the largest count c in [lo, hi] of parts kept (parts c, c+1, … dropped) that fit,
 * or null when even lo does not. Starts from an estimate (each part's own encoding length, dropped
 * from the end until `over` is covered), then checks and moves by one with real encodings.
 */
function largestFitting(lo: number, hi: number, over: number, partCost: (i: number) => number, encode: (c: number) => number[], max: number): number[] | null {
  let c = hi + 1;
  let saved = 0;
  while (c > lo && saved < over) {
    c--;
    saved += partCost(c);
  }
  let ids = encode(c);
  while (ids.length > max && c > lo) ids = encode(--c);
  if (ids.length > max) return null;
  while (c < hi) {
    const more = encode(c + 1);
    if (more.length > max) break;
    c++;
    ids = more;
  }
  return ids;
}
