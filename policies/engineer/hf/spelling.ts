/**
 * How the patch language is written in a Hugging Face tokenizer's ids, so that decoding under the
 * grammar over the tokenizer's vocabulary makes every sample a valid patch.
 *
 * **Spelling.** Each token g of the patch language (ENGINEER_VOCAB) that the grammar can emit is
 * the text `${ENGINEER_VOCAB[g]}\n`, encoded once, on its own, by the tokenizer: `spell(g)`. The
 * end token `<eos>` is the tokenizer's end id alone (tokenizer.ts: `eosId`). A completion is the
 * concatenation of its tokens' spellings (`toIds`): what the model is trained on and what it
 * samples, never re-tokenised. The spellings are checked when a spelling is built, for the whole
 * vocabulary: each decodes back to its text; its last id is the only one whose text holds the
 * newline (so no spelling is a strict prefix of another, and a sequence of ids splits into
 * spellings in one way only: `fromIds`); spellings are distinct and never hold the end id. A
 * tokenizer that breaks one is refused with ENGINEER_BAD_OPTION.
 *
 * **Constrained decoding** (`ConstrainedRow`). A trie over the spellings of the grammar tokens that
 * `allowedNext` admits after the grammar prefix so far: the ids allowed next are the children of
 * the current trie node; when a spelling completes, its grammar token joins the prefix and the
 * next allowed set (and its trie, cached by the set) is made.
 *
 * **The budget rule** (the id budget `maxIds`, e.g. the sampler's maxNewTokens). The built-in
 * sampler's grammar only admits a token after which the completion can still be closed within
 * MAX_COMPLETION_TOKENS (`allowedNext`: `1 + minFinish(next) ≤ left`). The same rule in ids: a
 * grammar token costs its spelling's length; from a grammar state s, `finishCost(s)` is the ids of
 * a fixed way to close the completion: the *finisher* path, which at each state takes, among the
 * grammar's candidates, the token whose next state has the smallest `minFinish` (ties: the shorter
 * spelling, then the smaller id), down to `<eos>` (1 id). A token g is allowed only when
 * `|spell(g)| + finishCost(after g) ≤ ids left`. Since the finisher's own next token always
 * passes, the allowed set is never empty, and the row ends with `<eos>` within `maxIds`, its
 * grammar tokens a sentence of the grammar (also within MAX_COMPLETION_TOKENS, since allowedNext
 * is obeyed too). The rule is conservative: the finisher is a cheap closing, not always the
 * cheapest. A row needs `maxIds ≥ |spell(<patch>)| + 1` (the empty patch) or is refused.
 *
 * Deterministic, no randomness.
 */
import { resolve } from 'node:path';
import { EngineerError } from '../errors.ts';
import { ENGINEER_VOCAB, ENGINEER_VOCAB_SIZE, EOS_ID, MAX_COMPLETION_TOKENS, PATCH_OPEN_ID, PatchGrammar, allowedNext, promptRefs } from '../patch-lang.ts';
import { NUMBER_TOKENS, SPECIAL_TOKENS, SPELL_TOKENS, SYMBOL_TOKENS, WORD_TOKENS } from '../tokens.ts';
import { loadHfTokenizer, type HfTokenizer } from './tokenizer.ts';

/** What a spelling needs of a tokenizer. */
export type SpellingTokenizer = Pick<HfTokenizer, 'encode' | 'decode' | 'eosId' | 'vocabSize'>;

/** Figures of a spelling (per tokenizer). */
export interface SpellingStats {
  /** grammar tokens spelled (EOS not counted) */
  tokens: number;
  /** mean ids per spelled grammar token (its newline included) */
  meanIds: number;
  maxIds: number;
  /** the token with the longest spelling */
  longest: string;
  /** tokens spelled with one id */
  singleId: number;
  /** distinct tokenizer ids the spellings use */
  distinctIds: number;
  /** the tokenizer's vocabulary size */
  vocabSize: number;
}

/** ENGINEER_VOCAB entries the grammar never writes (the packet's own structure tokens) */
const NOT_EMITTED = new Set<string>([...SPECIAL_TOKENS.filter((t) => t !== '<w>'), '<n:64+>', '<names>']);

/**
 * Classes of grammar tokens that move a grammar state alike as far as closing it goes: the text
 * atoms (words, numbers, symbols, refs, phrases, templates, regex parts: one more atom), the
 * letters of a spelled word, the counts, `<cap>`/`<upper>`, `<glue>`/`<space>`; every other token
 * is its own class. The budget rule evaluates one token per class present (as `allowedNext` does
 * per class). Checked, not trusted: each completed token's state is checked against the budget
 * (`ConstrainedRow.push`).
 */
const CLASS: Int32Array = (() => {
  const by = new Map<string, number>([...WORD_TOKENS, ...NUMBER_TOKENS, ...SYMBOL_TOKENS].map((t) => [t, 0] as const));
  for (const t of SPELL_TOKENS) by.set(t, 1);
  by.set('<cap>', 3).set('<upper>', 3).set('<glue>', 4).set('<space>', 4);
  const out = new Int32Array(ENGINEER_VOCAB_SIZE);
  ENGINEER_VOCAB.forEach((t, id) => {
    out[id] = by.get(t) ?? (/^<n:\d+>$/.test(t) ? 2 : /^<(ref|ph|tpl|rx):/.test(t) ? 0 : 5 + id);
  });
  return out;
})();
const N_CLASSES = 5 + ENGINEER_VOCAB_SIZE;

type GState = ReturnType<PatchGrammar['start']>;

class TrieNode {
  readonly next = new Map<number, TrieNode>();
  /** the grammar token whose spelling ends here, or -1 */
  gid = -1;
  private kids: number[] | null = null;
  ids(): number[] {
    return (this.kids ??= [...this.next.keys()]);
  }
}

function badTokenizer(what: string): EngineerError {
  return new EngineerError('ENGINEER_BAD_OPTION', `this tokenizer cannot spell the patch language: ${what}`, { field: 'tokenizer.json' });
}

function show(ids: readonly number[]): string {
  return ids.length > 24 ? `${ids.slice(0, 24).join(' ')} … (${ids.length})` : ids.join(' ');
}

/** Grammar per prompt names count, with the finisher's memo. */
interface GrammarCtx {
  gr: PatchGrammar;
  /** state key → finishCost */
  memo: Map<string, number>;
}

/** The patch language written in one tokenizer's ids (see the module comment). */
export class HfSpelling {
  readonly eosId: number;
  readonly stats: SpellingStats;
  private readonly spellings: (readonly number[] | null)[];
  private readonly cost: Int32Array;
  private readonly root = new TrieNode();
  private readonly tries = new Map<string, TrieNode>();
  private readonly grammars = new Map<number, GrammarCtx>();
  /** scratch of finisherStep: per class, its best candidate (-1 none) */
  private readonly classBest = new Int32Array(N_CLASSES).fill(-1);

  constructor(readonly tokenizer: SpellingTokenizer) {
    const tok = tokenizer;
    this.eosId = tok.eosId;
    this.spellings = Array.from({ length: ENGINEER_VOCAB_SIZE }, () => null);
    this.cost = new Int32Array(ENGINEER_VOCAB_SIZE);
    const nl = new Map<number, boolean>();
    const hasNewline = (id: number): boolean => {
      let v = nl.get(id);
      if (v === undefined) nl.set(id, (v = tok.decode([id]).includes('\n')));
      return v;
    };
    const used = new Set<number>();
    let total = 0;
    let n = 0;
    let single = 0;
    let longest = '';
    let maxIds = 0;
    for (let g = 0; g < ENGINEER_VOCAB_SIZE; g++) {
      const text = ENGINEER_VOCAB[g]!;
      if (g === EOS_ID || NOT_EMITTED.has(text)) continue;
      const ids = tok.encode(`${text}\n`);
      const shown = JSON.stringify(`${text}\n`);
      if (ids.length === 0) throw badTokenizer(`${shown} encodes to no ids`);
      for (const id of ids) if (!Number.isInteger(id) || id < 0 || id >= tok.vocabSize) throw badTokenizer(`${shown} encodes to id ${id}, outside the vocabulary (${tok.vocabSize})`);
      if (ids.includes(tok.eosId)) throw badTokenizer(`${shown} encodes to ${show(ids)}, which holds the end id ${tok.eosId}`);
      const back = tok.decode(ids);
      if (back !== `${text}\n`) throw badTokenizer(`${shown} encodes to ${show(ids)}, which decodes to ${JSON.stringify(back)}: the tokenizer loses characters of the patch language`);
      ids.forEach((id, i) => {
        const last = i === ids.length - 1;
        if (hasNewline(id) !== last) {
          throw badTokenizer(`${shown} encodes to ${show(ids)}, and id ${id} (${JSON.stringify(tok.decode([id]))}) ${last ? 'does not hold the newline' : 'holds a newline before the end'}: a spelling's last id must be its only id with the newline, so that no spelling is a prefix of another`);
        }
      });
      this.insert(this.root, ids, g, (other) => badTokenizer(`${shown} and ${JSON.stringify(`${ENGINEER_VOCAB[other]}\n`)} encode to overlapping ids (${show(ids)})`));
      const frozen = Object.freeze(ids.slice());
      this.spellings[g] = frozen;
      this.cost[g] = ids.length;
      for (const id of ids) used.add(id);
      total += ids.length;
      n++;
      if (ids.length === 1) single++;
      if (ids.length > maxIds) {
        maxIds = ids.length;
        longest = text;
      }
    }
    if (!Number.isInteger(tok.eosId) || tok.eosId < 0 || tok.eosId >= tok.vocabSize) throw badTokenizer(`the end id ${tok.eosId} is outside the vocabulary (${tok.vocabSize})`);
    this.spellings[EOS_ID] = Object.freeze([tok.eosId]);
    this.cost[EOS_ID] = 1;
    this.insert(this.root, [tok.eosId], EOS_ID, (other) => badTokenizer(`the end id ${tok.eosId} starts the spelling of ${JSON.stringify(ENGINEER_VOCAB[other])}`));
    this.stats = { tokens: n, meanIds: total / n, maxIds, longest, singleId: single, distinctIds: used.size, vocabSize: tok.vocabSize };
  }

  private insert(root: TrieNode, ids: readonly number[], g: number, clash: (other: number) => Error): void {
    let node = root;
    for (const id of ids) {
      if (node.gid >= 0) throw clash(node.gid);
      let nx = node.next.get(id);
      if (!nx) node.next.set(id, (nx = new TrieNode()));
      node = nx;
    }
    if (node.gid >= 0) throw clash(node.gid);
    if (node.next.size > 0) {
      let d = node;
      while (d.gid < 0) d = d.next.values().next().value!;
      throw clash(d.gid);
    }
    node.gid = g;
  }

  /** Whether the grammar token has a spelling (every token the grammar can emit has one). */
  has(g: number): boolean {
    return this.spellings[g] != null;
  }

  /** The tokenizer ids of grammar token `g` (EOS: the end id alone). Throws on a token the grammar never emits. */
  spell(g: number): readonly number[] {
    const s = this.spellings[g];
    if (!s) throw new EngineerError('ENGINEER_BAD_TOKENS', `grammar token ${g} (${JSON.stringify(ENGINEER_VOCAB[g] ?? '?')}) has no spelling: the patch grammar never writes it`);
    return s;
  }

  /** A completion (grammar ids, normally ending in EOS) as tokenizer ids: the concatenation of the spellings. */
  toIds(grammarIds: readonly number[]): number[] {
    const out: number[] = [];
    for (const g of grammarIds) for (const id of this.spell(g)) out.push(id);
    return out;
  }

  /**
   * Tokenizer ids back to grammar ids (a trie walk). Throws ENGINEER_BAD_TOKENS on ids that are
   * not a sequence of whole spellings, or that go on after the end id.
   */
  fromIds(ids: readonly number[]): number[] {
    const out: number[] = [];
    let node = this.root;
    let start = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (out[out.length - 1] === EOS_ID) throw new EngineerError('ENGINEER_BAD_TOKENS', `ids go on after the end id at position ${i}: ${show(ids.slice(i))}`);
      const nx = node.next.get(id);
      if (!nx) throw new EngineerError('ENGINEER_BAD_TOKENS', `ids ${show(ids.slice(start, i + 1))} at position ${start} are not the start of any patch-language token's spelling`);
      node = nx;
      if (node.gid >= 0) {
        out.push(node.gid);
        node = this.root;
        start = i + 1;
      }
    }
    if (node !== this.root) throw new EngineerError('ENGINEER_BAD_TOKENS', `the ids end inside a spelling: ${show(ids.slice(start))}`);
    return out;
  }

  /** @internal the grammar and the finisher memo for a prompt with `nRefs` names */
  ctx(nRefs: number): GrammarCtx {
    let c = this.grammars.get(nRefs);
    if (!c) this.grammars.set(nRefs, (c = { gr: new PatchGrammar(nRefs), memo: new Map() }));
    return c;
  }

  /** @internal the cost in ids of a grammar token */
  costOf(g: number): number {
    return this.cost[g]!;
  }

  /**
   * Ids the finisher needs to close the completion from grammar state `s` (module comment: the
   * budget rule), `<eos>` included; 0 once it is closed.
   */
  finishCost(c: GrammarCtx, s0: GState): number {
    const path: string[] = [];
    const costs: number[] = [];
    let s = s0;
    let acc = 0;
    for (let steps = 0; ; steps++) {
      const top = s.stack[s.stack.length - 1]!;
      if (top.k === 'done') break;
      const key = stateKey(s);
      const hit = c.memo.get(key);
      if (hit !== undefined) {
        acc = hit;
        break;
      }
      if (steps > 4 * MAX_COMPLETION_TOKENS) throw new EngineerError('ENGINEER_BAD_TOKENS', `the patch grammar's finisher did not close the completion within ${steps} tokens (an internal error of the grammar or of the budget rule)`);
      const f = this.finisherStep(c.gr, s);
      path.push(key);
      costs.push(this.cost[f]!);
      s = c.gr.step(s, f);
    }
    // suffix sums along the path, memoised
    for (let i = path.length - 1; i >= 0; i--) {
      acc += costs[i]!;
      c.memo.set(path[i]!, acc);
    }
    if (c.memo.size > 200_000) c.memo.clear();
    return acc;
  }

  /** the finisher's token at `s`: smallest minFinish after it, then the shortest spelling, then the smallest id */
  private finisherStep(gr: PatchGrammar, s: GState): number {
    // the cheapest spelled token per class among the candidates, then the best of those
    const best = this.classBest;
    const touched: number[] = [];
    const cost = this.cost;
    for (const id of gr.candidates(s)) {
      const c = cost[id]!;
      if (c === 0) continue;
      const k = CLASS[id]!;
      const cur = best[k]!;
      if (cur < 0) {
        best[k] = id;
        touched.push(k);
      } else if (c < cost[cur]! || (c === cost[cur] && id < cur)) best[k] = id;
    }
    let pick = -1;
    let pm = Infinity;
    for (const k of touched) {
      const id = best[k]!;
      best[k] = -1;
      const m = gr.minFinish(gr.step(s, id));
      if (m < pm || (m === pm && (cost[id]! < cost[pick]! || (cost[id] === cost[pick] && id < pick)))) {
        pick = id;
        pm = m;
      }
    }
    if (pick < 0) throw new EngineerError('ENGINEER_BAD_TOKENS', 'the patch grammar admits no token here (an internal error of the grammar)');
    return pick;
  }

  /** @internal the trie over the spellings of `gids` (cached by the set) */
  trie(gids: readonly number[]): TrieNode {
    const key = gids.join(',');
    let t = this.tries.get(key);
    if (!t) {
      t = new TrieNode();
      for (const g of gids) this.insert(t, this.spell(g), g, () => new EngineerError('ENGINEER_BAD_TOKENS', 'overlapping spellings (an internal error)'));
      if (this.tries.size >= 1024) this.tries.clear();
      this.tries.set(key, t);
    }
    return t;
  }
}

function stateKey(s: GState): string {
  return `${JSON.stringify(s.stack)}|${s.names.join(',')}`;
}

const spellingCache = new Map<string, HfSpelling>();

/** The spelling of the checkpoint folder `dir`'s tokenizer (cached per folder). */
export function hfSpelling(dir: string): HfSpelling {
  const abs = resolve(dir);
  let s = spellingCache.get(abs);
  if (!s) spellingCache.set(abs, (s = new HfSpelling(loadHfTokenizer(abs))));
  return s;
}

/**
 * One row of grammar-constrained decoding in tokenizer ids: what the sampler may write next, and
 * the grammar tokens written so far. `promptTokens` are the packet's built-in prompt tokens
 * (`engineerPromptTokens`: they say how many names `<ref:k>` exist); `maxIds` the ids the row
 * may write, its end id included (module comment: the budget rule).
 */
export class ConstrainedRow {
  private readonly g: GrammarCtx;
  private readonly prompt: readonly number[];
  private readonly gram: number[] = [];
  private state: GState;
  private node: TrieNode | null = null;
  private used = 0;
  private eos = false;

  constructor(
    readonly spelling: HfSpelling,
    promptTokens: readonly number[],
    readonly maxIds: number,
  ) {
    this.prompt = promptTokens.slice();
    this.g = spelling.ctx(promptRefs(promptTokens));
    this.state = this.g.gr.start();
    const need = spelling.finishCost(this.g, this.state);
    if (!Number.isInteger(maxIds) || maxIds < need) {
      throw new EngineerError('ENGINEER_BAD_OPTION', `maxIds ${maxIds}: a completion needs at least ${need} ids in this tokenizer (${spelling.costOf(PATCH_OPEN_ID)} for <patch>, 1 for the end id); raise the sampler's maxNewTokens`, { field: 'maxIds' });
    }
  }

  /** the grammar tokens written so far (complete spellings only); ends with EOS once done */
  get grammar(): readonly number[] {
    return this.gram;
  }

  /** the end id was written (the budget rule makes every row end so within maxIds) */
  get done(): boolean {
    return this.eos || this.used >= this.maxIds;
  }

  /** ids written so far */
  get length(): number {
    return this.used;
  }

  /** tokenizer ids allowed next (empty once done) */
  allowed(): number[] {
    if (this.done) return [];
    return this.current().ids().slice();
  }

  /** Write one id (one of `allowed()`; anything else throws ENGINEER_BAD_TOKENS). */
  push(id: number): void {
    if (this.done) throw new EngineerError('ENGINEER_BAD_TOKENS', `push(${id}) on a finished row`);
    const node = this.current();
    const nx = node.next.get(id);
    if (!nx) throw new EngineerError('ENGINEER_BAD_TOKENS', `id ${id} is not allowed after ${this.used} ids (grammar prefix ${this.gram.map((x) => ENGINEER_VOCAB[x]).join(' ') || '(empty)'}); allowed: ${show(node.ids())}`);
    this.used++;
    if (nx.gid < 0) {
      this.node = nx;
      return;
    }
    const gid = nx.gid;
    this.gram.push(gid);
    this.node = null;
    if (gid === EOS_ID) {
      this.eos = true;
      return;
    }
    this.state = this.g.gr.step(this.state, gid);
    const need = this.spelling.finishCost(this.g, this.state);
    if (need > this.maxIds - this.used) throw new EngineerError('ENGINEER_BAD_TOKENS', `after ${ENGINEER_VOCAB[gid]} the row needs ${need} ids to close but has ${this.maxIds - this.used} (an internal error of the budget rule)`);
  }

  private current(): TrieNode {
    return (this.node ??= this.spelling.trie(this.allowedGrammar()));
  }

  /** grammar tokens allowed next: allowedNext's, those whose spelling and closing fit what is left */
  private allowedGrammar(): number[] {
    const a = allowedNext(this.gram, this.prompt);
    if (a.length === 0) throw new EngineerError('ENGINEER_BAD_TOKENS', `the patch grammar admits nothing after ${this.gram.map((x) => ENGINEER_VOCAB[x]).join(' ')}`);
    const left = this.maxIds - this.used;
    const sp = this.spelling;
    const per = new Map<number, number>();
    const out: number[] = [];
    for (const g of a) {
      if (!sp.has(g)) throw new EngineerError('ENGINEER_BAD_TOKENS', `the patch grammar admits ${JSON.stringify(ENGINEER_VOCAB[g])}, which has no spelling (add it to the spelled vocabulary in hf/spelling.ts)`);
      const k = CLASS[g]!;
      let f = per.get(k);
      if (f === undefined) per.set(k, (f = g === EOS_ID ? 0 : sp.finishCost(this.g, this.g.gr.step(this.state, g))));
      if (sp.costOf(g) + f <= left) out.push(g);
    }
    if (out.length === 0) throw new EngineerError('ENGINEER_BAD_TOKENS', `no grammar token fits the ${left} ids left after ${this.gram.map((x) => ENGINEER_VOCAB[x]).join(' ')} (an internal error of the budget rule)`);
    return out;
  }
}
