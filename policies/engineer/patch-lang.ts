/**
 * The built-in engineer's language: what it reads and what it writes.
 *
 * **Input** (`engineerPromptTokens`): the packet itself, tokenised: env, batch counts, a names
 * section (`<names> <ref:0> words… <ref:1> words…`: the objects, places, products, tables,
 * columns and SQL error names the excerpts show, `packetNames`), signal totals, then per failed
 * episode its task type, status, reward, steps, goal, signals and action–observation excerpt
 * (`episodeTokens`), each episode an equal share of the budget (default 512 tokens).
 *
 * **Output**: any patch of the patch language, written token by token under a grammar
 * (`allowedNext`) that admits only sequences that decode into a schema-valid patch:
 *
 * ```
 * completion := <patch> item* <eos>
 * item       := <skill> TEXT <end>
 *             | <rule> [<name:k>] <hook:H> [<when> COND] EFFECT
 *             | <code> [<name:k>] <hook:H> (<blk:B> <n:choice>*)+ <end>
 * COND       := <pred:P> | <path:S> (<op:equals>|<op:contains>) VALUE <end> | <path:S> (<op:matches>|<op:imatches>) PATTERN <end>
 *             | <path:N> (<op:equals>|<op:gt>|<op:gte>|<op:lt>|<op:lte>) <n:k> | <path:A> <op:contains> VALUE <end>
 *             | <all> COND{1,3} <endc> | <any> COND{1,3} <endc> | <not> COND        (3 deep at most)
 * EFFECT     := one of the hook's effects: <eff:skill|tool_hint> TEXT <end> | <eff:note> <key:k> NOTEVALUE
 *             | <eff:hint|block_and_prompt|inject_hint> MESSAGE <end> | <eff:rewrite_action|force_action> ACTION <end>
 * TEXT atoms := vocabulary words, numbers, symbols, spelled words (<w> #c…), <cap>/<upper> word,
 *               <ref:k> (a packet name, copied), <ph:k> (a phrase); MESSAGE and ACTION also <tpl:path> ({{path}})
 * ```
 *
 * A code hook is composed from the tested blocks of blocks.ts with their parameters. The grammar
 * bounds sizes (≤ 5 skills, ≤ 12 rules and code hooks, ≤ 40 atoms per text, conditions of ≤ 40
 * nodes, MAX_COMPLETION_TOKENS in all) so that every admitted sequence fits the schema's limits,
 * and it only admits a token after which the completion can still be closed within the budget.
 */
import { ENV_NAMES } from '../../envs/registry.ts';
import { Rng } from '../../cluster/rng.ts';
import { HOOKS, EFFECTS_BY_HOOK, PREDICATES, toPatch, type CodeHook, type Cond, type HookName, type Patch, type Rule } from '../../harness/index.ts';
import { MAX_ACTION_CHARS, MAX_ENTRIES, MAX_MESSAGE_CHARS, MAX_PATTERN_CHARS, MAX_SKILL_CHARS } from '../../harness/schema.ts';
import { BLOCKS, BLOCK_INDEX, composeSource, parseComposed, type BlockUse } from './blocks.ts';
import { EngineerError } from './errors.ts';
import { alfSighting, type Packet } from './packet.ts';
import { BOS_ID, EOS_ID, MAX_REFS, NUMBER_TOKENS, PAD_ID, SPELL_TOKENS, SYMBOL_TOKENS, VOCAB, VOCAB_SIZE, WORD_TOKENS, countToken, encodeText, envToken, episodeTokens, tokenId } from './tokens.ts';

// ---------------------------------------------------------------- the language's inventory

/** ctx paths a condition or a template may read, by type */
export const STRING_PATHS = ['observation', 'last.action', 'last.observation', 'proposed.action', 'proposed.text', 'task.goal', 'task.type', 'env', 'history.-1.action', 'history.-1.observation', 'history.-2.action', 'admissible.0', 'nb.held'] as const;
export const NUMBER_PATHS = ['step', 'blocks', 'limits.stepsLeft', 'limits.maxSteps', 'history.length', 'admissible.length', 'nb.failed.length', 'nb.visited.length', 'nb.count'] as const;
export const ARRAY_PATHS = ['admissible', 'skills', 'nb.failed', 'nb.visited', 'nb.room'] as const;
const PATHS = [...STRING_PATHS, ...NUMBER_PATHS, ...ARRAY_PATHS];
type PathType = 'string' | 'number' | 'array';
const PATH_TYPE = new Map<string, PathType>([...STRING_PATHS.map((p) => [p, 'string'] as const), ...NUMBER_PATHS.map((p) => [p, 'number'] as const), ...ARRAY_PATHS.map((p) => [p, 'array'] as const)]);
/** paths a `{{template}}` may name */
export const TEMPLATE_PATHS = [...STRING_PATHS, ...NUMBER_PATHS] as const;

/** rule and code-hook names the engineer may give */
export const NAMES = ['no-repeat', 'loop-hint', 'loop-counter', 'nothing-happens', 'failed-actions', 'inadmissible', 'format-hint', 'format-block', 'sql-error', 'no-table', 'no-column', 'bad-click', 'click-block', 'steps-left', 'step-budget', 'visited', 'closest', 'notes', 'held', 'buy-check', 'answer-check', 'guard', 'tracker', 'fix', 'stuck', 'explore', 'take', 'query', 'options', 'finish'] as const;
/** notebook keys a note effect may set */
export const NOTE_KEYS = ['count', 'stage', 'flag', 'held', 'goal', 'plan'] as const;
const OPS = ['equals', 'contains', 'matches', 'imatches', 'gt', 'gte', 'lt', 'lte'] as const;
const RX = ['^', '$', '|', '.*', '\\b', '\\s', '\\d'] as const;
const EFFECT_TYPES = ['skill', 'tool_hint', 'note', 'hint', 'block_and_prompt', 'rewrite_action', 'force_action', 'inject_hint'] as const;

/**
 * Phrases: whole clauses an editor writes often, one token each (texts are also free to use any
 * word). Each is a normal text (round-trips through the text rules).
 */
export const PHRASES = [
  'Nothing happens means the action was not valid.',
  'Try a different action.',
  'Choose a different action.',
  'Do not repeat the same action.',
  'Do not try it again.',
  'did nothing last time;',
  'is not a valid action here.',
  'is not possible here.',
  'Only choose from the admissible actions,',
  'with the exact object names and numbers.',
  'Use only the places and objects you have seen.',
  'Use the exact names from the observation.',
  'There is no',
  'in this room.',
  'on this page.',
  'in this database.',
  'Go to a receptacle before you interact with it,',
  'and open it first if it is closed.',
  'Keep track of the places you already checked',
  'and do not go back to them.',
  'If an action did not change anything,',
  'You seem stuck in a loop:',
  'Repeating the last action will not help.',
  'Only a few steps are left.',
  'Finish the task now.',
  'Stop searching and complete the goal with the fewest actions.',
  'Check that every part of the goal is done before you finish.',
  'Respond with exactly one action and nothing else.',
  'Your last reply was not in the required format.',
  'Respond with exactly one action in the required format.',
  'Before writing SQL, check the table and column names against the headers given in the task;',
  'wrap names with spaces in backticks and quote string values with single quotes.',
  'The query failed.',
  'Read the error message and fix the query.',
  'Use the exact table name given in the task, in backticks.',
  'Do not answer until you have run a query that gives the answer.',
  'Final Answer:',
  'Action: Operation',
  'Action: Answer',
  'Only click buttons shown on the current page, using their exact text.',
  'Before buying, select the options the instruction names (size, color),',
  'then check the price and buy.',
  'Search with the words of the instruction:',
  'the product type and its key attributes.',
  'Pick the result whose title matches the instruction best.',
  'Remember the task:',
  'You are holding',
  'Put it in the place the goal names.',
  'Look for the object where such objects usually are:',
  'You already checked',
] as const;

// ---------------------------------------------------------------- tokens

const GRAMMAR_TOKENS = [
  '<patch>', '<skill>', '<rule>', '<code>', '<end>', '<when>', '<all>', '<any>', '<not>', '<endc>', '<cap>', '<upper>', '<true>', '<false>', '<null>', '<glue>', '<space>',
  ...HOOKS.map((h) => `<hook:${h}>`),
  ...PREDICATES.map((p) => `<pred:${p}>`),
  ...PATHS.map((p) => `<path:${p}>`),
  ...OPS.map((o) => `<op:${o}>`),
  ...EFFECT_TYPES.map((e) => `<eff:${e}>`),
  ...TEMPLATE_PATHS.map((p) => `<tpl:${p}>`),
  ...RX.map((r) => `<rx:${r}>`),
  ...NAMES.map((n) => `<name:${n}>`),
  ...NOTE_KEYS.map((k) => `<key:${k}>`),
  ...BLOCKS.map((b) => `<blk:${b.id}>`),
  ...PHRASES.map((_, i) => `<ph:${i}>`),
];
/** The engineer model's vocabulary: the packet vocabulary, then the grammar's tokens. */
export const ENGINEER_VOCAB: readonly string[] = Object.freeze([...VOCAB, ...GRAMMAR_TOKENS]);
export const ENGINEER_VOCAB_SIZE = ENGINEER_VOCAB.length;
const GID = new Map(GRAMMAR_TOKENS.map((t, i) => [t, VOCAB_SIZE + i]));
function g(t: string): number {
  const id = GID.get(t);
  if (id === undefined) throw new RangeError(`"${t}" is not a grammar token`);
  return id;
}
export const PATCH_OPEN_ID = g('<patch>');
const SKILL = g('<skill>'), RULE = g('<rule>'), CODE = g('<code>'), END = g('<end>'), WHEN = g('<when>'), ALL = g('<all>'), ANY = g('<any>'), NOT = g('<not>'), ENDC = g('<endc>'), CAP = g('<cap>'), UPPER = g('<upper>'), TRUE = g('<true>'), FALSE = g('<false>'), NULL = g('<null>'), GLUE = g('<glue>'), SPACE = g('<space>');
const HOOK_ID = new Map(HOOKS.map((h) => [h, g(`<hook:${h}>`)]));
const PRED_ID = new Map(PREDICATES.map((p) => [p, g(`<pred:${p}>`)]));
const PATH_ID = new Map<string, number>(PATHS.map((p) => [p, g(`<path:${p}>`)]));
const OP_ID = new Map(OPS.map((o) => [o, g(`<op:${o}>`)]));
const EFF_ID = new Map(EFFECT_TYPES.map((e) => [e, g(`<eff:${e}>`)]));
const TPL_ID = new Map(TEMPLATE_PATHS.map((p) => [p as string, g(`<tpl:${p}>`)]));
const RX_ID = new Map(RX.map((r) => [r as string, g(`<rx:${r}>`)]));
const NAME_ID = new Map(NAMES.map((n) => [n as string, g(`<name:${n}>`)]));
const KEY_ID = new Map(NOTE_KEYS.map((k) => [k as string, g(`<key:${k}>`)]));
const BLK_ID = new Map(BLOCKS.map((b) => [b.id, g(`<blk:${b.id}>`)]));
const PH_BASE = g('<ph:0>');
const REF_BASE = tokenId('<ref:0>');
const NAMES_ID = tokenId('<names>');
const W_ID = tokenId('<w>');
const WORD_SET = new Set(WORD_TOKENS.map((w) => tokenId(w)));
const NUM_SET = new Set(NUMBER_TOKENS.map((w) => tokenId(w)));
const SPELL_SET = new Set(SPELL_TOKENS.map((w) => tokenId(w)));
const SYM_SET = new Set(SYMBOL_TOKENS.map((w) => tokenId(w)));
const COUNT_BASE = countToken(0);
const RAW_ID = new Map(VOCAB.map((t, i) => [t, i]));

/**
 * The structural tokens of the language (hooks, predicates, paths, comparisons, effects, blocks,
 * names): what a patch is made of, apart from its texts (the reward model's patch features).
 */
export const STRUCTURE_TOKENS: readonly string[] = GRAMMAR_TOKENS.filter((t) => /^<(hook|pred|path|op|eff|blk|tpl):/.test(t) || ['<when>', '<all>', '<any>', '<not>'].includes(t));
/** id → token text, for the engineer vocabulary */
export function engineerToken(id: number): string | undefined {
  return ENGINEER_VOCAB[id];
}

/**
 * Bump when the prompt, the grammar or the vocabulary changes: an engineer trained under another
 * version reads and writes other tokens (experiments key their cached engineers by it).
 * 2: the packet's names and excerpts in, the whole patch language out (1 was the 46-item menu).
 * 4: intervention blocks explore_unvisited, take_goal_object, search_goal, select_options and their hook names.
 * 5: the finish_goal block and its hook name `finish`.
 * 6: closest_admissible leaves a free-text action (WebShop's search[...]) alone when no admissible
 *    action has its verb (it rewrote `search[noise]` to `click[search]`).
 */
export const PATCH_LANG_VERSION = 6;

/** Completion length bound: `<patch>` … `<eos>`. */
export const MAX_COMPLETION_TOKENS = 256;
/** Failed episodes the prompt renders (the packet's first, in its selection order). @default 6 */
export const PROMPT_EPISODES = 6;
/** Prompt tokens of the engineer's input. @default 512 */
export const DEFAULT_PROMPT_TOKENS = 512;
export const MAX_SKILL_ITEMS = 5;
export const MAX_HOOK_ITEMS = MAX_ENTRIES;
const MAX_BLOCKS = 4;
const MAX_LIST = 3;
const MAX_DEPTH = 3;
const NAME_CHARS = 48;
export { BOS_ID, EOS_ID, PAD_ID };

type Mode = 'text' | 'msg' | 'action' | 'pattern' | 'value';
const MODE_LIMIT: Record<Mode, { atoms: number; chars: number }> = {
  text: { atoms: 40, chars: MAX_SKILL_CHARS - 100 },
  msg: { atoms: 40, chars: MAX_MESSAGE_CHARS - 100 },
  action: { atoms: 16, chars: MAX_ACTION_CHARS - 50 },
  pattern: { atoms: 12, chars: MAX_PATTERN_CHARS - 50 },
  value: { atoms: 8, chars: 400 },
};

// ---------------------------------------------------------------- text ⇄ atoms

/** `sp`: a space before the atom where the default spacing rule says otherwise (`<space>` / `<glue>`) */
type Atom = ({ t: 'word' | 'num' | 'sym'; s: string; cap?: 'cap' | 'upper' } | { t: 'ref'; k: number } | { t: 'ph'; k: number } | { t: 'tpl'; p: string } | { t: 'rx'; r: string }) & { sp?: boolean };

const GLUE_BEFORE = new Set([...'.,:;!?)]}%']);
const GLUE_AFTER = new Set([...'([{$']);
const GLUE_BOTH = new Set([...'/_-@#\\^`~|\'"']);

function atomText(a: Atom, names: readonly string[]): string {
  switch (a.t) {
    case 'ref':
      return names[a.k] ?? '';
    case 'ph':
      return PHRASES[a.k] ?? '';
    case 'tpl':
      return `{{${a.p}}}`;
    case 'rx':
      return a.r;
    default:
      return a.cap === 'cap' ? a.s[0]!.toUpperCase() + a.s.slice(1) : a.cap === 'upper' ? a.s.toUpperCase() : a.s;
  }
}

/** the default spacing: is there a space between `prev` and `a` */
function spaceBetween(prev: Atom, a: Atom, mode: Mode): boolean {
  if (mode === 'pattern') return !(prev.t === 'rx' || a.t === 'rx' || prev.t === 'sym' || a.t === 'sym');
  return !((a.t === 'sym' && (GLUE_BEFORE.has(a.s) || GLUE_BOTH.has(a.s))) || (prev.t === 'sym' && (GLUE_AFTER.has(prev.s) || GLUE_BOTH.has(prev.s))));
}

/** join atoms the way texts are written: spaces between words, none inside symbol glue, unless an atom says otherwise */
function joinAtoms(atoms: readonly Atom[], names: readonly string[], mode: Mode): string {
  let out = '';
  let prev: Atom | null = null;
  for (const a of atoms) {
    const s = mode === 'pattern' && a.t === 'sym' ? escapeRx(a.s) : mode === 'pattern' && a.t === 'ref' ? escapeRx(atomText(a, names)) : atomText(a, names);
    if (prev && (a.sp ?? spaceBetween(prev, a, mode))) out += ' ';
    out += s;
    prev = a;
  }
  return out;
}

function escapeRx(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

interface Piece {
  s: string;
  /** a space before it in the source */
  sp: boolean;
}

function pieces(text: string, mode: Mode): Piece[] | null {
  const out: Piece[] = [];
  const re = mode === 'pattern' ? /\\[bsd]|\\[^A-Za-z0-9]|\.\*|[A-Za-z]+|[0-9]+|\s+|./gy : /\{\{[^{}]*\}\}|[A-Za-z]+|[0-9]+|\s+|./gy;
  let sp = false;
  for (const m of text.matchAll(re)) {
    const s = m[0];
    if (/^\s+$/.test(s)) {
      sp = true;
      continue;
    }
    out.push({ s, sp });
    sp = false;
  }
  return out;
}

function wordAtom(s: string, mode: Mode): Atom | null {
  if (/^[0-9]+$/.test(s)) return { t: 'num', s };
  const low = s.toLowerCase();
  const cap: Atom = { t: 'word', s: low };
  if (s === low) return cap;
  if (s === low[0]!.toUpperCase() + low.slice(1)) return { ...cap, cap: 'cap' };
  if (s === s.toUpperCase() && s.length > 1) return { ...cap, cap: 'upper' };
  return null;
}

function piecesMatch(ps: readonly Piece[], at: number, target: readonly Piece[]): boolean {
  if (at + target.length > ps.length) return false;
  for (let i = 0; i < target.length; i++) {
    if (ps[at + i]!.s !== target[i]!.s) return false;
    if (i > 0 && ps[at + i]!.sp !== target[i]!.sp) return false;
  }
  return true;
}

const PHRASE_PIECES = PHRASES.map((p) => pieces(p, 'text')!);

/** atoms of a text, or null when it cannot be written in this mode */
function textAtoms(text: string, mode: Mode, names: readonly string[]): Atom[] | null {
  const ps = pieces(text, mode);
  if (!ps || ps.length === 0) return null;
  const namePieces = names.map((n) => pieces(n, 'text') ?? []);
  const out: Atom[] = [];
  for (let i = 0; i < ps.length; ) {
    // the longest phrase or name that starts here (names win ties: they are what the packet saw)
    let best: { atom: Atom; len: number } | null = null;
    if (mode === 'text' || mode === 'msg') {
      PHRASE_PIECES.forEach((pp, k) => {
        if (pp.length > (best?.len ?? 1) - 1 && pp.length > 1 && piecesMatch(ps, i, pp) && (!best || pp.length > best.len)) best = { atom: { t: 'ph', k }, len: pp.length };
      });
    }
    if (mode !== 'pattern') {
      namePieces.forEach((np, k) => {
        if (np.length > 0 && piecesMatch(ps, i, np) && (!best || np.length >= best.len)) best = { atom: { t: 'ref', k }, len: np.length };
      });
    }
    const sp = ps[i]!.sp;
    const push = (a: Atom) => {
      const prev = out[out.length - 1];
      out.push(prev && spaceBetween(prev, a, mode) !== sp ? { ...a, sp } : a);
    };
    if (best) {
      push((best as { atom: Atom }).atom);
      i += (best as { len: number }).len;
      continue;
    }
    const s = ps[i]!.s;
    i++;
    if (mode === 'pattern') {
      if (s === '.*' || s === '^' || s === '$' || s === '|' || s === '\\b' || s === '\\s' || s === '\\d') {
        push({ t: 'rx', r: s });
        continue;
      }
      if (s.length === 2 && s[0] === '\\' && RAW_ID.has(s[1]!)) {
        push({ t: 'sym', s: s[1]! });
        continue;
      }
      if (/[.*+?^${}()|[\]\\/]/.test(s)) return null;
    }
    if (s.startsWith('{{')) {
      const p = s.slice(2, -2).trim();
      if ((mode !== 'msg' && mode !== 'action') || !TPL_ID.has(p)) return null;
      push({ t: 'tpl', p });
      continue;
    }
    if (/^[A-Za-z]+$/.test(s) || /^[0-9]+$/.test(s)) {
      const a = wordAtom(s, mode);
      if (!a) return null;
      push(a);
      continue;
    }
    if (RAW_ID.has(s) && SYM_SET.has(RAW_ID.get(s)!)) {
      push({ t: 'sym', s });
      continue;
    }
    return null;
  }
  return out;
}

function atomTokens(a: Atom): number[] {
  const pre = a.sp === undefined ? [] : [a.sp ? SPACE : GLUE];
  return [...pre, ...atomTokens1(a)];
}

function atomTokens1(a: Atom): number[] {
  switch (a.t) {
    case 'ref':
      return [REF_BASE + a.k];
    case 'ph':
      return [PH_BASE + a.k];
    case 'tpl':
      return [TPL_ID.get(a.p)!];
    case 'rx':
      return [RX_ID.get(a.r)!];
    case 'sym':
      return [RAW_ID.get(a.s)!];
    default: {
      const pre = a.cap === 'cap' ? [CAP] : a.cap === 'upper' ? [UPPER] : [];
      const id = RAW_ID.get(a.s);
      const single = id !== undefined && (a.t === 'num' ? NUM_SET.has(id) : WORD_SET.has(id));
      return single ? [...pre, id] : [...pre, W_ID, ...[...a.s].map((c) => RAW_ID.get(`#${c}`)!)];
    }
  }
}

// ---------------------------------------------------------------- the grammar as a pushdown automaton

type Frame =
  | { k: 'open' }
  | { k: 'items'; skills: number; hooks: number }
  | { k: 'done' }
  | { k: 'head'; code: boolean; named: boolean }
  | { k: 'when'; hook: HookName }
  | { k: 'effect'; hook: HookName }
  | { k: 'key' }
  | { k: 'value' }
  | { k: 'cond'; depth: number }
  | { k: 'list'; depth: number; n: number }
  | { k: 'op'; type: PathType }
  | { k: 'num' }
  | { k: 'blocks'; hook: HookName; n: number }
  | { k: 'choices'; sizes: number[] }
  | { k: 'text'; mode: Mode; atoms: number; chars: number; sub: 0 | 1 | 2 | 3 | 4 };
// text sub-states: 0 between atoms, 1 right after <w> (a letter must follow), 2 inside a spelled word, 3 after <cap>/<upper>, 4 after <glue>/<space> (an atom must follow)

interface State {
  stack: Frame[];
  names: string[];
  len: number;
}

/** The grammar for one packet: `refs` names (their lengths bound texts). */
export class PatchGrammar {
  readonly refLens: readonly number[];
  constructor(refs: readonly string[] | number) {
    // by count: every name as long as a name may be, so that what a count admits the names admit too
    this.refLens = typeof refs === 'number' ? Array.from({ length: Math.min(refs, MAX_REFS) }, () => NAME_CHARS + 2) : refs.slice(0, MAX_REFS).map((r) => Math.min(r.length, NAME_CHARS) + 2);
  }

  start(): State {
    return { stack: [{ k: 'open' }], names: [], len: 0 };
  }

  private readonly memo = new Map<string, State | null>();

  /** the state after `ids`, or null when some id is not admitted (states of recent prefixes are kept) */
  run(ids: readonly number[]): State | null {
    const key = ids.join(',');
    const hit = this.memo.get(key);
    if (hit !== undefined) return hit;
    let s: State | null;
    if (ids.length === 0) s = this.start();
    else {
      const prev = this.run(ids.slice(0, -1));
      const id = ids[ids.length - 1]!;
      s = prev && this.candidates(prev).includes(id) ? this.step(prev, id) : null;
    }
    if (this.memo.size > 4096) this.memo.clear();
    this.memo.set(key, s);
    return s;
  }

  /** ids admitted after `ids` (within the token budget) */
  allowed(ids: readonly number[]): number[] {
    const s = this.run(ids);
    if (!s) return [];
    const top = s.stack[s.stack.length - 1]!;
    if (top.k === 'done') return [EOS_ID];
    const left = MAX_COMPLETION_TOKENS - s.len;
    const out: number[] = [];
    // one trial step per class of ids that move the state alike
    const memo = new Map<string, boolean>();
    for (const id of this.candidates(s)) {
      const cls = this.classOf(top, id);
      let ok = cls ? memo.get(cls) : undefined;
      if (ok === undefined) {
        const n = this.step(s, id);
        ok = n !== null && 1 + this.minFinish(n) <= left;
        if (cls) memo.set(cls, ok);
      }
      if (ok) out.push(id);
    }
    return out;
  }

  /** ids of one class move the state alike as far as the budget goes (minFinish) */
  private classOf(top: Frame, id: number): string | null {
    if (top.k === 'text') {
      if (id === END || id === CAP || id === UPPER || id === W_ID || id === GLUE || id === SPACE) return null;
      return SPELL_SET.has(id) ? 'spell' : 'atom';
    }
    if (top.k === 'num' || top.k === 'choices') return 'n';
    if (top.k === 'head' && NAME_IDS.has(id)) return 'name';
    if ((top.k === 'cond' || top.k === 'list') && PRED_ID_SET.has(id)) return 'pred';
    if ((top.k === 'cond' || top.k === 'list') && PATH_OF.has(id)) return `path:${PATH_TYPE.get(PATH_OF.get(id)!)}`;
    return null;
  }

  /** tokens needed at least to close everything from `s` (the final <eos> included) */
  minFinish(s: State): number {
    let n = 0;
    for (const f of s.stack) n += this.minFrame(f);
    return n;
  }

  private minFrame(f: Frame): number {
    switch (f.k) {
      case 'open':
        return 2;
      case 'items':
        return 1;
      case 'done':
        return 0;
      case 'head':
        return 4; // hook, effect (hint), one atom, <end>
      case 'when':
        return 3;
      case 'effect':
        return 3;
      case 'key':
        return 1;
      case 'value':
        return 1;
      case 'cond':
        return 1;
      case 'list':
        return f.n >= 1 ? 1 : 2;
      case 'op':
        return f.type === 'number' ? 2 : 3;
      case 'num':
        return 1;
      case 'blocks':
        return f.n >= 1 ? 1 : 2;
      case 'choices':
        return f.sizes.length;
      case 'text':
        return f.sub === 1 || f.sub === 3 || f.sub === 4 ? 2 : f.atoms === 0 ? 2 : 1;
    }
  }

  private condStarts(depth: number): number[] {
    const out = [...PRED_ID.values(), ...PATH_ID.values()];
    if (depth < MAX_DEPTH) out.push(ALL, ANY, NOT);
    return out;
  }

  private textAtomIds(f: Extract<Frame, { k: 'text' }>): number[] {
    const lim = MODE_LIMIT[f.mode];
    const room = lim.chars - f.chars;
    if (f.sub === 1) return [...SPELL_SET];
    const words = [...WORD_SET].filter((id) => VOCAB[id]!.length + 1 <= room);
    if (f.sub === 3) return room > 2 ? [...words, W_ID] : [];
    const out: number[] = [];
    if (f.sub === 2 && room >= 1) out.push(...SPELL_SET);
    const canAdd = f.atoms < lim.atoms && room >= 4;
    if (f.sub !== 4 && f.atoms > 0) out.push(END);
    if (f.sub !== 4 && f.atoms > 0 && canAdd) out.push(GLUE, SPACE);
    if (!canAdd) return out;
    out.push(...words, ...[...NUM_SET].filter((id) => VOCAB[id]!.length + 1 <= room), ...SYM_SET, W_ID);
    out.push(CAP, UPPER);
    this.refLens.forEach((l, k) => {
      if (l + 1 <= room) out.push(REF_BASE + k);
    });
    if (f.mode === 'text' || f.mode === 'msg') PHRASES.forEach((p, k) => p.length + 1 <= room && out.push(PH_BASE + k));
    if (f.mode === 'msg' || f.mode === 'action') for (const [p, id] of TPL_ID) if (p.length + 5 <= room) out.push(id);
    if (f.mode === 'pattern') out.push(...RX_ID.values());
    return out;
  }

  /** ids the grammar admits next, before the budget check */
  candidates(s: State): number[] {
    const top = s.stack[s.stack.length - 1]!;
    switch (top.k) {
      case 'open':
        return [PATCH_OPEN_ID];
      case 'done':
        return [EOS_ID];
      case 'items': {
        const out = [EOS_ID];
        if (top.skills < MAX_SKILL_ITEMS) out.push(SKILL);
        if (top.hooks < MAX_HOOK_ITEMS) out.push(RULE, CODE);
        return out;
      }
      case 'head': {
        const out: number[] = [];
        if (!top.named) for (const [n, id] of NAME_ID) if (!s.names.includes(n)) out.push(id);
        for (const [h, id] of HOOK_ID) if (!top.code || BLOCKS.some((b) => b.hooks.includes(h))) out.push(id);
        return out;
      }
      case 'when':
        return [WHEN, ...EFFECTS_BY_HOOK[top.hook].map((e) => EFF_ID.get(e)!)];
      case 'effect':
        return EFFECTS_BY_HOOK[top.hook].map((e) => EFF_ID.get(e)!);
      case 'key':
        return [...KEY_ID.values()];
      case 'value': {
        const out = [TRUE, FALSE, NULL, ...Array.from({ length: 64 }, (_, i) => COUNT_BASE + i)];
        const f: Extract<Frame, { k: 'text' }> = { k: 'text', mode: 'value', atoms: 0, chars: 0, sub: 0 };
        return [...out, ...this.textAtomIds(f)];
      }
      case 'cond':
        return this.condStarts(top.depth);
      case 'list': {
        const out = top.n >= 1 ? [ENDC] : [];
        if (top.n < MAX_LIST) out.push(...this.condStarts(top.depth + 1));
        return out;
      }
      case 'op':
        return top.type === 'string' ? [OP_ID.get('equals')!, OP_ID.get('contains')!, OP_ID.get('matches')!, OP_ID.get('imatches')!] : top.type === 'number' ? ['equals', 'gt', 'gte', 'lt', 'lte'].map((o) => OP_ID.get(o as (typeof OPS)[number])!) : [OP_ID.get('contains')!];
      case 'num':
        return Array.from({ length: 64 }, (_, i) => COUNT_BASE + i);
      case 'blocks': {
        const out = top.n >= 1 ? [END] : [];
        if (top.n < MAX_BLOCKS) for (const b of BLOCKS) if (b.hooks.includes(top.hook)) out.push(BLK_ID.get(b.id)!);
        return out;
      }
      case 'choices':
        return Array.from({ length: top.sizes[0]! }, (_, i) => COUNT_BASE + i);
      case 'text':
        return this.textAtomIds(top);
    }
  }

  /** the state after one admitted id (the caller checked it is a candidate) */
  step(s0: State, id: number): State {
    const stack = s0.stack.slice();
    const s: State = { stack, names: s0.names, len: s0.len + 1 };
    const top = stack.pop()!;
    const push = (...f: Frame[]) => stack.push(...f);
    switch (top.k) {
      case 'open':
        push({ k: 'items', skills: 0, hooks: 0 });
        break;
      case 'done':
        push(top);
        break;
      case 'items':
        if (id === EOS_ID) push({ k: 'done' });
        else if (id === SKILL) push({ ...top, skills: top.skills + 1 }, { k: 'text', mode: 'text', atoms: 0, chars: 0, sub: 0 });
        else push({ ...top, hooks: top.hooks + 1 }, { k: 'head', code: id === CODE, named: false });
        break;
      case 'head': {
        const name = NAMES.find((n) => NAME_ID.get(n) === id);
        if (name) {
          s.names = [...s.names, name];
          push({ ...top, named: true });
        } else {
          const hook = HOOKS.find((h) => HOOK_ID.get(h) === id)!;
          push(top.code ? { k: 'blocks', hook, n: 0 } : { k: 'when', hook });
        }
        break;
      }
      case 'when':
        if (id === WHEN) push({ k: 'effect', hook: top.hook }, { k: 'cond', depth: 1 });
        else return this.step({ ...s, stack: [...stack, { k: 'effect', hook: top.hook }], len: s0.len }, id);
        break;
      case 'effect': {
        const e = EFFECT_TYPES.find((x) => EFF_ID.get(x) === id)!;
        if (e === 'note') push({ k: 'value' }, { k: 'key' });
        else push({ k: 'text', mode: e === 'skill' || e === 'tool_hint' ? 'text' : e === 'rewrite_action' || e === 'force_action' ? 'action' : 'msg', atoms: 0, chars: 0, sub: 0 });
        break;
      }
      case 'key':
        break;
      case 'value':
        if (id === TRUE || id === FALSE || id === NULL || (id >= COUNT_BASE && id < COUNT_BASE + 64)) break;
        return this.step({ ...s, stack: [...stack, { k: 'text', mode: 'value', atoms: 0, chars: 0, sub: 0 }], len: s0.len }, id);
      case 'cond':
        if (id === ALL || id === ANY) push({ k: 'list', depth: top.depth, n: 0 });
        else if (id === NOT) push({ k: 'cond', depth: top.depth + 1 });
        else if (!PRED_ID_SET.has(id)) push({ k: 'op', type: PATH_TYPE.get(PATH_OF.get(id)!)! });
        break;
      case 'list':
        if (id === ENDC) break;
        return this.step({ ...s, stack: [...stack, { ...top, n: top.n + 1 }, { k: 'cond', depth: top.depth + 1 }], len: s0.len }, id);
      case 'op': {
        const op = OPS.find((o) => OP_ID.get(o) === id)!;
        if (top.type === 'number') push({ k: 'num' });
        else push({ k: 'text', mode: op === 'matches' || op === 'imatches' ? 'pattern' : 'value', atoms: 0, chars: 0, sub: 0 });
        break;
      }
      case 'num':
        break;
      case 'blocks': {
        if (id === END) break;
        const b = BLOCKS.find((x) => BLK_ID.get(x.id) === id)!;
        push({ ...top, n: top.n + 1 });
        if (b.params.length) push({ k: 'choices', sizes: b.params.map((p) => p.choices.length) });
        break;
      }
      case 'choices':
        if (top.sizes.length > 1) push({ k: 'choices', sizes: top.sizes.slice(1) });
        break;
      case 'text': {
        if (id === END) break;
        if (SPELL_SET.has(id)) {
          push({ ...top, sub: 2, chars: top.chars + 1 });
          break;
        }
        if (id === CAP || id === UPPER) {
          push({ ...top, sub: 3 });
          break;
        }
        if (id === GLUE || id === SPACE) {
          push({ ...top, sub: 4 });
          break;
        }
        if (id === W_ID) {
          push({ ...top, sub: 1, atoms: top.atoms + 1, chars: top.chars + 1 });
          break;
        }
        push({ ...top, sub: 0, atoms: top.atoms + 1, chars: top.chars + this.atomLen(id) });
        break;
      }
    }
    return s;
  }

  private atomLen(id: number): number {
    if (id >= REF_BASE && id < REF_BASE + MAX_REFS) return (this.refLens[id - REF_BASE] ?? NAME_CHARS) + 1;
    if (id >= PH_BASE && id < PH_BASE + PHRASES.length) return PHRASES[id - PH_BASE]!.length + 1;
    for (const [p, t] of TPL_ID) if (t === id) return p.length + 5;
    return (ENGINEER_VOCAB[id]?.length ?? 4) + 1;
  }
}
const PRED_ID_SET = new Set(PRED_ID.values());
const NAME_IDS = new Set(NAME_ID.values());
const PATH_OF = new Map([...PATH_ID].map(([p, id]) => [id, p]));

const grammarCache = new Map<number, PatchGrammar>();
function grammarFor(nRefs: number): PatchGrammar {
  let gr = grammarCache.get(nRefs);
  if (!gr) grammarCache.set(nRefs, (gr = new PatchGrammar(nRefs)));
  return gr;
}

/** How many names the prompt's names section holds. */
export function promptRefs(prompt: readonly number[]): number {
  let n = 0;
  for (const id of prompt) if (id >= REF_BASE && id < REF_BASE + MAX_REFS) n = Math.max(n, id - REF_BASE + 1);
  return n;
}

/**
 * The grammar constraint: ids that may follow `prefix` (the completion so far) for a prompt
 * (its names section says how many `<ref:k>` exist). Registered for samplers as `patch`.
 */
export function allowedNext(prefix: readonly number[], prompt: readonly number[] = []): number[] {
  return grammarFor(promptRefs(prompt)).allowed(prefix);
}

// ---------------------------------------------------------------- decoding

class Reader {
  i = 0;
  constructor(readonly ids: readonly number[], readonly names: readonly string[]) {}
  peek(): number | undefined {
    return this.ids[this.i];
  }
  next(): number {
    const id = this.ids[this.i++];
    if (id === undefined) throw this.err('the completion ends early');
    return id;
  }
  err(what: string): EngineerError {
    return new EngineerError('ENGINEER_BAD_TOKENS', `${what} at position ${this.i} (token ${JSON.stringify(ENGINEER_VOCAB[this.ids[this.i] ?? -1] ?? this.ids[this.i])})`);
  }
}

function readText(r: Reader, mode: Mode): string {
  const atoms: Atom[] = [];
  let cap: 'cap' | 'upper' | undefined;
  let sp: boolean | undefined;
  const add = (a: Atom) => {
    atoms.push({ ...a, ...(cap && (a.t === 'word' || a.t === 'num') ? { cap } : {}), ...(sp !== undefined ? { sp } : {}) });
    cap = undefined;
    sp = undefined;
  };
  for (;;) {
    const id = r.next();
    if (id === END) break;
    if (id === GLUE || id === SPACE) sp = id === SPACE;
    else if (id === CAP || id === UPPER) cap = id === CAP ? 'cap' : 'upper';
    else if (id === W_ID) {
      let w = '';
      while (r.peek() !== undefined && SPELL_SET.has(r.peek()!)) w += VOCAB[r.next()]![1];
      if (!w) throw r.err('<w> needs letters');
      add({ t: /^[0-9]+$/.test(w) ? 'num' : 'word', s: w });
    } else if (WORD_SET.has(id) || NUM_SET.has(id)) add({ t: NUM_SET.has(id) ? 'num' : 'word', s: VOCAB[id]! });
    else if (SYM_SET.has(id)) add({ t: 'sym', s: VOCAB[id]! });
    else if (id >= REF_BASE && id < REF_BASE + MAX_REFS) {
      if (id - REF_BASE >= r.names.length) throw r.err(`<ref:${id - REF_BASE}> but the packet has ${r.names.length} names`);
      add({ t: 'ref', k: id - REF_BASE });
    } else if (id >= PH_BASE && id < PH_BASE + PHRASES.length) add({ t: 'ph', k: id - PH_BASE });
    else {
      const tok = ENGINEER_VOCAB[id] ?? '';
      if (tok.startsWith('<tpl:')) add({ t: 'tpl', p: tok.slice(5, -1) });
      else if (tok.startsWith('<rx:')) add({ t: 'rx', r: tok.slice(4, -1) });
      else {
        r.i--;
        throw r.err('not a text token');
      }
    }
  }
  if (atoms.length === 0) throw r.err('an empty text');
  return joinAtoms(atoms, r.names, mode);
}

function readCond(r: Reader): Cond {
  const id = r.next();
  if (id === ALL || id === ANY) {
    const list: Cond[] = [];
    while (r.peek() !== ENDC) list.push(readCond(r));
    r.next();
    return id === ALL ? { all: list } : { any: list };
  }
  if (id === NOT) return { not: readCond(r) };
  const tok = ENGINEER_VOCAB[id] ?? '';
  if (tok.startsWith('<pred:')) return { pred: tok.slice(6, -1) as (typeof PREDICATES)[number] };
  if (!tok.startsWith('<path:')) {
    r.i--;
    throw r.err('not a condition');
  }
  const path = tok.slice(6, -1);
  const op = (ENGINEER_VOCAB[r.next()] ?? '').slice(4, -1);
  if (PATH_TYPE.get(path) === 'number') {
    const n = r.next() - COUNT_BASE;
    return { path, [op]: n } as Cond;
  }
  if (op === 'matches' || op === 'imatches') return { path, matches: readText(r, 'pattern'), ...(op === 'imatches' ? { flags: 'i' as const } : {}) };
  return { path, [op]: readText(r, 'value') } as Cond;
}

function readValue(r: Reader): unknown {
  const id = r.peek();
  if (id === TRUE || id === FALSE || id === NULL) {
    r.next();
    return id === TRUE ? true : id === FALSE ? false : null;
  }
  if (id !== undefined && id >= COUNT_BASE && id < COUNT_BASE + 64) return r.next() - COUNT_BASE;
  return readText(r, 'value');
}

/**
 * Decode a completion into a patch, with the packet's names for `<ref:k>`. Throws
 * ENGINEER_BAD_TOKENS on a sequence the grammar does not admit.
 */
export function tokensToPatch(ids: readonly number[], names: readonly string[] = []): Patch {
  const gr = new PatchGrammar(names);
  const cut = ids.indexOf(EOS_ID);
  const body = cut >= 0 ? ids.slice(0, cut + 1) : ids;
  if (cut < 0 || !gr.run(body)) throw new EngineerError('ENGINEER_BAD_TOKENS', `the completion is not a sentence of the patch grammar (${cut < 0 ? 'no <eos>' : 'a token the grammar does not admit'}): ${body.slice(0, 40).map((i) => ENGINEER_VOCAB[i] ?? i).join(' ')}`);
  const r = new Reader(body, names);
  if (r.next() !== PATCH_OPEN_ID) throw r.err('a completion starts with <patch>');
  const skills: string[] = [];
  const rules: Rule[] = [];
  const code: CodeHook[] = [];
  for (;;) {
    const id = r.next();
    if (id === EOS_ID) break;
    if (id === SKILL) {
      skills.push(readText(r, 'text'));
      continue;
    }
    let name: string | undefined;
    let t = ENGINEER_VOCAB[r.next()] ?? '';
    if (t.startsWith('<name:')) {
      name = t.slice(6, -1);
      t = ENGINEER_VOCAB[r.next()] ?? '';
    }
    const hook = t.slice(6, -1) as HookName;
    if (id === CODE) {
      const uses: BlockUse[] = [];
      while (r.peek() !== END) {
        const b = BLOCK_INDEX.get((ENGINEER_VOCAB[r.next()] ?? '').slice(5, -1))!;
        uses.push({ id: b.id, params: b.params.map(() => r.next() - COUNT_BASE) });
      }
      r.next();
      code.push({ ...(name ? { name } : {}), hook, source: composeSource(hook, uses) });
      continue;
    }
    let when: Cond | undefined;
    if (r.peek() === WHEN) {
      r.next();
      when = readCond(r);
    }
    const eff = (ENGINEER_VOCAB[r.next()] ?? '').slice(5, -1) as (typeof EFFECT_TYPES)[number];
    let effect: Rule['effect'];
    if (eff === 'note') {
      const key = (ENGINEER_VOCAB[r.next()] ?? '').slice(5, -1);
      effect = { type: 'note', key, value: readValue(r) as never };
    } else if (eff === 'skill' || eff === 'tool_hint') effect = { type: eff, text: readText(r, 'text') };
    else if (eff === 'rewrite_action' || eff === 'force_action') effect = { type: eff, action: readText(r, 'action') };
    else effect = { type: eff, message: readText(r, 'msg') };
    rules.push({ ...(name ? { name } : {}), hook, ...(when ? { when } : {}), effect } as Rule);
  }
  return toPatch({ ...(skills.length ? { skills } : {}), ...(rules.length ? { rules } : {}), ...(code.length ? { code } : {}) });
}

// ---------------------------------------------------------------- encoding

function textTokens(text: string, mode: Mode, names: readonly string[]): number[] | null {
  const atoms = textAtoms(text, mode, names);
  if (!atoms || joinAtoms(atoms, names, mode) !== text) return null;
  return [...atoms.flatMap(atomTokens), END];
}

function condTokens(c: Cond, names: readonly string[]): number[] | null {
  if ('all' in c || 'any' in c) {
    const list = 'all' in c ? c.all : c.any;
    const parts = list.map((x) => condTokens(x, names));
    if (parts.some((p) => p === null)) return null;
    return ['all' in c ? ALL : ANY, ...parts.flatMap((p) => p!), ENDC];
  }
  if ('not' in c) {
    const inner = condTokens(c.not, names);
    return inner ? [NOT, ...inner] : null;
  }
  if ('pred' in c) return [PRED_ID.get(c.pred)!];
  const pid = PATH_ID.get(c.path);
  const type = PATH_TYPE.get(c.path);
  if (pid === undefined || !type) return null;
  if (type === 'number') {
    const op = (['equals', 'gt', 'gte', 'lt', 'lte'] as const).find((o) => o in c);
    const v = op ? (c as Record<string, unknown>)[op] : undefined;
    if (!op || typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 63) return null;
    return [pid, OP_ID.get(op)!, COUNT_BASE + v];
  }
  if ('matches' in c) {
    if (type !== 'string') return null;
    const t = textTokens(c.matches, 'pattern', names);
    return t ? [pid, OP_ID.get(c.flags === 'i' ? 'imatches' : 'matches')!, ...t] : null;
  }
  const op = 'contains' in c ? 'contains' : 'equals' in c && type === 'string' ? 'equals' : null;
  const v = op ? (c as Record<string, unknown>)[op] : undefined;
  if (!op || typeof v !== 'string') return null;
  const t = textTokens(v, 'value', names);
  return t ? [pid, OP_ID.get(op)!, ...t] : null;
}

/**
 * The tokens of a patch (with the packet's names, which texts refer to by `<ref:k>`), or null when
 * some part of it is outside the grammar's space (a code hook not composed from blocks, a path the
 * grammar has no token for, a text that does not round-trip). A sequence returned here decodes
 * back to the same patch.
 */
export function patchToTokens(patch: unknown, names: readonly string[] = []): number[] | null {
  const p = toPatch(patch);
  const out = [PATCH_OPEN_ID];
  for (const s of p.skills ?? []) {
    const t = textTokens(s, 'text', names);
    if (!t) return null;
    out.push(SKILL, ...t);
  }
  const head = (name: string | undefined): number[] | null => {
    if (name === undefined) return [];
    const id = NAME_ID.get(name);
    return id === undefined ? null : [id];
  };
  for (const r of p.rules ?? []) {
    const h = head(r.name);
    if (!h) return null;
    out.push(RULE, ...h, HOOK_ID.get(r.hook)!);
    if (r.when) {
      const c = condTokens(r.when, names);
      if (!c) return null;
      out.push(WHEN, ...c);
    }
    const e = r.effect;
    out.push(EFF_ID.get(e.type)!);
    let t: number[] | null;
    if (e.type === 'note') {
      const k = KEY_ID.get(e.key);
      if (k === undefined) return null;
      const v = e.value;
      t = v === true ? [TRUE] : v === false ? [FALSE] : v === null ? [NULL] : typeof v === 'number' ? (Number.isInteger(v) && v >= 0 && v < 64 ? [COUNT_BASE + v] : null) : typeof v === 'string' ? textTokens(v, 'value', names) : null;
      if (t) t = [k, ...t];
    } else if (e.type === 'skill' || e.type === 'tool_hint') t = textTokens(e.text, 'text', names);
    else if (e.type === 'rewrite_action' || e.type === 'force_action') t = textTokens(e.action, 'action', names);
    else t = textTokens(e.message, 'msg', names);
    if (!t) return null;
    out.push(...t);
  }
  for (const c of p.code ?? []) {
    const h = head(c.name);
    const uses = parseComposed(c.hook, c.source);
    if (!h || !uses) return null;
    out.push(CODE, ...h, HOOK_ID.get(c.hook)!, ...uses.flatMap((u) => [BLK_ID.get(u.id)!, ...u.params.map((x) => COUNT_BASE + x)]), END);
  }
  out.push(EOS_ID);
  const gr = new PatchGrammar(names);
  if (!gr.run(out) || out.length > MAX_COMPLETION_TOKENS) return null;
  return out;
}

// ---------------------------------------------------------------- the prompt

/** an ALFWorld action's object or place (`go to drawer 5` → `drawer 5`); the teacher reads it too */
export const ALF_NAME = /(?:^|\b(?:to|take|from|in|on|open|close|examine|use|heat|cool|clean|with|put|toggle)\s)([a-z]+ \d+)/g;

/**
 * The names a packet shows (at most MAX_REFS, ≤ 48 characters). ALFWorld's come first by salience:
 * for each shown episode whose excerpt saw an object of its goal's kind ({@link alfSighting}), its
 * goal, that object and the place (`put a cd in drawer`, `cd 3`, `drawer 5`), so that `<ref:0>`,
 * `<ref:1>`, `<ref:2>` are the first such sighting in every packet; then, in order of first
 * appearance, objects and places named in actions (`drawer 5`, `tomato 2`) and objects of the
 * goal's kinds its observations showed. DBBench: tables and columns of the goals and the tables
 * and columns SQL errors name; WebShop: searches and clicks.
 */
export function packetNames(p: Packet): string[] {
  const out: string[] = [];
  const add = (s: string | undefined) => {
    const t = s?.trim();
    if (t && t.length <= NAME_CHARS && !out.includes(t) && out.length < MAX_REFS) out.push(t);
  };
  for (const e of p.episodes) {
    const s = alfSighting(e);
    // a triple or nothing: the rules that use it need all three
    if (s && s.goal.length <= NAME_CHARS && out.length + 3 <= MAX_REFS && !out.includes(s.goal)) for (const n of [s.goal, s.object, s.place]) if (!out.includes(n)) out.push(n);
  }
  for (const e of p.episodes) {
    if (e.env === 'dbbench') {
      add(/name of this table is (.+?), and the headers/i.exec(e.goal)?.[1]);
      for (const l of e.excerpt) {
        for (const m of l.observation.matchAll(/Unknown column '([^']+)'|Table '(?:[^'.]+\.)?([^']+)' doesn't exist/gi)) add(m[1] ?? m[2]);
      }
      const hd = /headers of this table are (.+?)\.?\s*$/i.exec(e.goal)?.[1];
      for (const c of hd?.split(',') ?? []) add(c);
    } else if (e.env === 'webshop') {
      for (const l of e.excerpt) {
        const m = /^(?:search|click)\[(.+)\]$/.exec(l.action);
        if (m && m[1]!.length >= 2 && !/^(<product|buy now$|< prev$|next >$|back to search$|description$|features$|reviews$|attributes$)/i.test(m[1]!)) add(m[1]);
      }
    } else {
      for (const l of e.excerpt) for (const m of l.action.matchAll(ALF_NAME)) add(m[1]);
      // objects of the goal's kinds that an observation showed (`a butterknife 2`)
      const kinds = new Set(e.goal.toLowerCase().match(/[a-z]+/g) ?? []);
      for (const l of e.excerpt) for (const m of l.observation.matchAll(/\b([a-z]+) (\d+)\b/g)) if (kinds.has(m[1]!)) add(`${m[1]} ${m[2]}`);
    }
  }
  return out;
}

/**
 * The built-in engineer's input: `<bos> <env:…> <n:won> <n:failed> <n:shown> <names> (<ref:k>
 * words)… <sig> totals…`, then the failed episodes (`episodeTokens`: type, status, reward, steps,
 * goal, signals, excerpt), each an equal share of what is left of `maxTokens`, cut with `<cut>`;
 * `<eos>` last. Deterministic.
 */
export function engineerPromptTokens(p: Packet, maxTokens = DEFAULT_PROMPT_TOKENS): number[] {
  const env = envToken((ENV_NAMES as readonly string[]).includes(p.env) ? p.env : 'other');
  const out = [BOS_ID, env, countToken(p.batch.won), countToken(p.batch.failed), countToken(p.episodes.length)];
  const names = packetNames(p);
  if (names.length) {
    out.push(NAMES_ID);
    names.forEach((n, k) => out.push(REF_BASE + k, ...encodeText(n).slice(0, 6)));
  }
  const t = p.totals;
  out.push(tokenId('<sig>'));
  const sig: [string, { episodes: number; count: number }][] = [
    ['<sig:run>', t.repeated],
    ['<sig:noop>', t.noOps],
    ['<sig:invalid_format>', t.invalidFormats],
    ['<sig:sql_error>', t.sqlErrors],
    ['<sig:invalid_click>', t.invalidClicks],
    ['<sig:repeat_obs>', t.repeatedObservations],
    ['<status:step_limit>', t.stepLimit],
  ];
  for (const [name, v] of sig) if (v.episodes > 0) out.push(tokenId(name), countToken(v.episodes), countToken(v.count));
  const room = maxTokens - out.length - 1;
  // the first PROMPT_EPISODES episodes of the packet's selection (round robin over task types), so
  // that each keeps its excerpt
  const shown = p.episodes.slice(0, PROMPT_EPISODES);
  const share = shown.length > 0 ? Math.floor(room / shown.length) : room;
  for (const e of shown) {
    if (share < 8) break;
    const et = episodeTokens(e);
    if (et.length > share) out.push(...et.slice(0, share - 1), tokenId('<cut>'));
    else out.push(...et);
  }
  out.push(EOS_ID);
  return out.slice(0, maxTokens);
}

// ---------------------------------------------------------------- the size of the space

/**
 * log10 of the number of completions the grammar admits (with `names` packet names), by Knuth's
 * estimator: over uniform random walks, the mean of the product of the branching factors along
 * the walk is the number of root-to-leaf paths. Seeded; a rough figure (the estimator's variance
 * is large), stated in docs/ENGINEER.md next to the old menu's.
 */
export function grammarSpaceLog10(o: { names?: number; walks?: number; seed?: number } = {}): number {
  const g = new PatchGrammar(o.names ?? 0);
  const rng = new Rng(o.seed ?? 0);
  const logs: number[] = [];
  for (let w = 0; w < (o.walks ?? 200); w++) {
    const seq: number[] = [];
    let l = 0;
    for (;;) {
      const a = g.allowed(seq);
      l += Math.log10(a.length);
      const id = rng.pick(a);
      seq.push(id);
      if (id === EOS_ID) break;
    }
    logs.push(l);
  }
  const m = Math.max(...logs);
  return m + Math.log10(logs.reduce((s, x) => s + 10 ** (x - m), 0) / logs.length);
}
