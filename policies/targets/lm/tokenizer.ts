/**
 * The learned targets' tokenizer: word-level over a vocabulary harvested from the shipped env
 * texts and the hint phrasings (vocab.ts), with a spelling fallback.
 *
 * Text is lower-cased and split into words ([a-z0-9]+) and single symbols. A word in the
 * vocabulary (or a number 0–99) is one token; any other word is `<w>` then its characters (`#a`…`#z`,
 * `#0`…`#9`). Numbers 0–99 are one token. Other characters are `<unk>`. Decoding joins words with
 * spaces and glues punctuation back (`in/on`, `search[red shoes]`, `desk 1.`), so an action
 * survives a round trip up to case and spacing around symbols.
 */

/** structure tokens; ids 0.. in this order (PAD 0, BOS 1, EOS 2 as the learner defaults) */
export const LM_SPECIAL_TOKENS = ['<pad>', '<bos>', '<eos>', '<unk>', '<w>', '<sys>', '<skill>', '<goal>', '<obs>', '<act>', '<hint>', '<cut>'] as const;
export type LmSpecial = (typeof LM_SPECIAL_TOKENS)[number];

export const LM_NUMBER_TOKENS = Array.from({ length: 100 }, (_, i) => String(i));
export const LM_SPELL_TOKENS = [...'abcdefghijklmnopqrstuvwxyz0123456789'].map((c) => `#${c}`);
export const LM_SYMBOL_TOKENS = [...`.,:;!?'"()[]{}<>=*/-_+%$&#@\`~|\\^`];

/** no space before these when decoding */
const GLUE_LEFT = new Set(['[', '.', ',', ':', ';', '!', '?', ']', ')', '/', '-', "'", '%']);
/** no space after these */
const GLUE_RIGHT = new Set(['[', '(', '/', '-', '$', "'"]);

export const PAD_ID = 0;
export const BOS_ID = 1;
export const EOS_ID = 2;

/**
 * A tokenizer over a word list (the vocabulary's words, in id order after the fixed tokens).
 *
 * @example
 * const tok = new LmTokenizer(['go', 'to', 'desk']);
 * tok.decode(tok.encode('go to desk 1')); // 'go to desk 1'
 */
export class LmTokenizer {
  /** every token, id = index */
  readonly vocab: readonly string[];
  readonly size: number;
  private readonly id: Map<string, number>;
  private readonly spellStart: number;
  private readonly unk: number;

  constructor(readonly words: readonly string[]) {
    const seen = new Set<string>();
    const ws: string[] = [];
    for (const w of words) {
      if (!/^[a-z]+$/.test(w) || seen.has(w)) continue;
      seen.add(w);
      ws.push(w);
    }
    this.vocab = Object.freeze([...LM_SPECIAL_TOKENS, ...LM_NUMBER_TOKENS, ...LM_SPELL_TOKENS, ...LM_SYMBOL_TOKENS, ...ws]);
    this.size = this.vocab.length;
    this.id = new Map(this.vocab.map((t, i) => [t, i]));
    this.spellStart = this.special('<w>');
    this.unk = this.special('<unk>');
  }

  /** whether a lower-case word (or a number 0–99) is one token */
  has(word: string): boolean {
    return /^[a-z0-9]+$/.test(word) && this.id.has(word);
  }

  /** the id of a structure token */
  special(t: LmSpecial): number {
    return this.id.get(t)!;
  }

  /** Encode free text (see the module comment). */
  encode(text: string): number[] {
    const out: number[] = [];
    for (const m of text.toLowerCase().matchAll(/[a-z0-9]+|\S/g)) {
      const w = m[0];
      const isWord = /^[a-z0-9]+$/.test(w);
      const id = this.id.get(w);
      if (isWord && id !== undefined) out.push(id);
      else if (isWord) {
        // <w> starts a spelled word, so two spelled words in a row stay apart
        out.push(this.spellStart);
        for (const c of w) out.push(this.id.get(`#${c}`)!);
      } else if (w === '<' || w === '#') out.push(this.id.get(w)!);
      else out.push(id !== undefined && !LM_SPECIAL_TOKENS.includes(w as LmSpecial) ? id : this.unk);
    }
    return out;
  }

  /**
   * Ids back to words and symbols: spelled words joined, structure tokens dropped, `<unk>` as
   * `unk` (default the text `<unk>`).
   */
  pieces(ids: readonly number[], unk = '<unk>'): string[] {
    const parts: string[] = [];
    let spelled = '';
    const flush = (): void => {
      if (spelled) parts.push(spelled);
      spelled = '';
    };
    for (const id of ids) {
      const t = this.vocab[id] ?? '<unk>';
      if (t.length === 2 && t.startsWith('#')) {
        spelled += t[1];
        continue;
      }
      flush();
      if (t === '<unk>') parts.push(unk);
      else if (!(t.startsWith('<') && t.length > 1)) parts.push(t);
    }
    flush();
    return parts;
  }

  /** Ids back to text; structure tokens other than `<unk>` are dropped. */
  decode(ids: readonly number[]): string {
    const parts = this.pieces(ids);
    let s = '';
    let glue = true;
    for (const p of parts) {
      s += glue || GLUE_LEFT.has(p) ? p : ` ${p}`;
      glue = GLUE_RIGHT.has(p);
    }
    return s;
  }
}

/** Text as the tokenizer sees it: lower case, decoded spacing (for round-trip comparisons). */
export function normalizeText(tok: LmTokenizer, text: string): string {
  return tok.decode(tok.encode(text));
}
