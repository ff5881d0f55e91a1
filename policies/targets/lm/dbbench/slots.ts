/**
 * Name slots (DBBench), the WebShop product slots' counterpart (../slots.ts): a dev table's name
 * (`Tournament history from 2007-2012`) and its headers are words a small model must copy from the
 * table info, most of them spelled letter by letter by the word tokenizer. With slots on, the
 * table info says `The name of this table is tslot, and the headers of this table are cslot 1
 * Tournament,cslot 2 2007,…` (each header keeps its words after its slot, so the question can be
 * matched to it), backticked names in earlier SQL are written `` `tslot` `` and `` `cslot K` ``,
 * and the slots a model writes are mapped back to the names they stand for. Values (`'Q1'`) are
 * not renamed: the model copies them from the question, as before.
 */
import type { ChatMessage } from '../../../../harness/index.ts';
import type { Slotting } from '../slots.ts';
import { SQL_KEYWORDS } from './words.ts';

/** the words slots are written with */
export const TABLE_SLOT = 'tslot';
export const COLUMN_SLOT = 'cslot';

/** DBBench v0.2's table info sentence (the last in a message) */
const INFO_RE = /The name of this table is (.+?), and the headers of this table are (.+?)\.?$/m;

/** One decision's renaming: the table and its headers, in order (slot K is headers[K − 1]). */
export interface DbSlotMap {
  readonly table: string | null;
  readonly columns: readonly string[];
}

/** The slots of a context: the table info of the newest message that has one. */
export function dbSlotMap(messages: readonly ChatMessage[]): DbSlotMap {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = INFO_RE.exec(messages[i]!.content);
    if (m) return { table: m[1]!, columns: m[2]!.split(',') };
  }
  return { table: null, columns: [] };
}

/** SQL text with backticked names written as slots (`` `tslot` ``, `` `cslot K` ``). */
export function toDbSlots(text: string, map: DbSlotMap): string {
  if (map.table === null) return text;
  return text.replace(/`([^`\n]+)`/g, (all, name: string) => {
    if (name === map.table) return `\`${TABLE_SLOT}\``;
    const k = map.columns.indexOf(name);
    return k >= 0 ? `\`${COLUMN_SLOT} ${k + 1}\`` : all;
  });
}

/** The messages with the table info and the names in SQL written as slots. */
export function dbSlotMessages(messages: readonly ChatMessage[], map: DbSlotMap): ChatMessage[] {
  if (map.table === null) return messages.map((m) => ({ ...m }));
  const info = `The name of this table is ${TABLE_SLOT}, and the headers of this table are ${map.columns.map((c, k) => `${COLUMN_SLOT} ${k + 1} ${c}`).join(',')}.`;
  return messages.map((m) => ({ ...m, content: toDbSlots(m.content.replace(INFO_RE, info), map) }));
}

/** A reply with the slots written back as backticked names (unknown slots stay as written). */
export function fromDbSlots(text: string, map: DbSlotMap): string {
  if (map.table === null) return text;
  const table = `\`${map.table}\``;
  const col = (all: string, k: string): string => {
    const c = map.columns[Number(k) - 1];
    return c === undefined ? all : `\`${c}\``;
  };
  return text
    .replace(new RegExp(`\`\\s*${TABLE_SLOT}\\s*\``, 'gi'), table)
    .replace(new RegExp(`\`\\s*${COLUMN_SLOT}\\s*(\\d+)\\s*\``, 'gi'), col)
    .replace(new RegExp(`\\b${TABLE_SLOT}\\b`, 'gi'), table)
    .replace(new RegExp(`\\b${COLUMN_SLOT}\\s*(\\d+)\\b`, 'gi'), col);
}

/** DBBench's table and column slots. */
export const NAME_SLOTS: Slotting<DbSlotMap> = { words: [TABLE_SLOT, COLUMN_SLOT], map: dbSlotMap, messages: dbSlotMessages, to: toDbSlots, from: fromDbSlots };

/*
 * Value slots (`slots: 'values'`, on top of the name slots). A value the SQL must hold exactly
 * (`'Scenic Rim'`, `1305`, `March 19, 1998`) is mostly words the vocabulary lacks, which the
 * tokenizer spells letter by letter and a small model copies badly (`'prention of rention'`).
 * With value slots, from the question on (the message with the table info, then every result),
 * a word is written `vslot K` when the tokenizer would spell it (not in the vocabulary, or a
 * number from 100 up) or when it has a capital letter and does not start a sentence as a
 * vocabulary word (`What`, `Insert` stay words; in the table info's header list, capitalised as
 * names are, only a spelled word counts); SQL's keywords and the slot words never are. Every
 * occurrence of a slotted word (case aside) is written as its slot, headers included.
 * K numbers distinct words (case aside) by first appearance, at most 99. The model copies
 * `vslot K` like any one-token word; a slot it writes is the word again, and a quoted span is
 * then written as the conversation has it (case and spacing, dbbench/render.ts).
 */
export const VALUE_SLOT = 'vslot';
/** distinct slotted words per decision; later ones stay as they are. @default 99 */
export const MAX_VALUE_SLOTS = 99;

/** Name slots plus value slots: `values[K − 1]` is the lower-case word slot K stands for, `forms` the first spelling seen. */
export interface DbValueSlotMap extends DbSlotMap {
  readonly values: readonly string[];
  readonly forms: readonly string[];
  readonly slotOf: ReadonlyMap<string, number>;
}

const WORD_RE = /[A-Za-z0-9]+/g;
const NEVER = new Set([TABLE_SLOT, COLUMN_SLOT, VALUE_SLOT, ...SQL_KEYWORDS.map((w) => w.toLowerCase())]);

/** A word is one token of the vocabulary (a vocabulary word or a number 0–99). */
export type IsToken = (lowerWord: string) => boolean;

/** Whether a word at `index` of `text` is slotted (see above). */
export function isValueWord(word: string, text: string, index: number, isToken: IsToken): boolean {
  const low = word.toLowerCase();
  if (NEVER.has(low)) return false;
  if (!isToken(low)) return true;
  if (!/[A-Z]/.test(word)) return false;
  const before = text.slice(0, index).trimEnd();
  const sentenceStart = before === '' || /[.?!:\n]$/.test(before);
  return !sentenceStart;
}

/** The name slots and the value slots of a context (`isToken`: the model's vocabulary). */
export function dbValueSlotMap(messages: readonly ChatMessage[], isToken: IsToken): DbValueSlotMap {
  const names = dbSlotMap(messages);
  const values: string[] = [];
  const forms: string[] = [];
  const slotOf = new Map<string, number>();
  let from = -1;
  for (let i = messages.length - 1; i >= 0 && from < 0; i--) if (INFO_RE.test(messages[i]!.content)) from = i;
  if (from >= 0) {
    const named = dbSlotMessages(messages, names);
    for (let i = from; i < named.length && values.length < MAX_VALUE_SLOTS; i++) {
      if (named[i]!.role === 'assistant') continue;
      const text = named[i]!.content;
      // the table info's headers are capitalised as names are: there only a spelled word is a value
      const info = INFO_RE.exec(text);
      const inInfo = (k: number): boolean => info !== null && k >= info.index && k < info.index + info[0].length;
      for (const m of text.matchAll(WORD_RE)) {
        const low = m[0].toLowerCase();
        const k = m.index ?? 0;
        if (slotOf.has(low) || !(inInfo(k) ? !isToken(low) && !NEVER.has(low) : isValueWord(m[0], text, k, isToken))) continue;
        values.push(low);
        forms.push(m[0]);
        slotOf.set(low, values.length);
        if (values.length >= MAX_VALUE_SLOTS) break;
      }
    }
  }
  return { ...names, values, forms, slotOf };
}

/** Text with every slotted word written `vslot K` (names as the name slots write them). */
export function toDbValueSlots(text: string, map: DbValueSlotMap): string {
  return toValueWords(toDbSlots(text, map), map);
}

function toValueWords(text: string, map: DbValueSlotMap): string {
  if (map.values.length === 0) return text;
  return text.replace(WORD_RE, (w) => {
    const k = map.slotOf.get(w.toLowerCase());
    return k === undefined ? w : `${VALUE_SLOT} ${k}`;
  });
}

/** The messages with names and values as slots. */
export function dbValueSlotMessages(messages: readonly ChatMessage[], map: DbValueSlotMap): ChatMessage[] {
  return dbSlotMessages(messages, map).map((m) => ({ ...m, content: toValueWords(m.content, map) }));
}

/** A reply's words and symbols (the tokenizer's pieces) with `vslot K` as the word it stands for (lower case, as the tokenizer writes words). */
export function expandValuePieces(ps: readonly string[], map: DbValueSlotMap): string[] {
  const out: string[] = [];
  for (let i = 0; i < ps.length; i++) {
    const v = ps[i] === VALUE_SLOT && ps[i + 1] !== undefined && /^\d+$/.test(ps[i + 1]!) ? map.values[Number(ps[i + 1]) - 1] : undefined;
    if (v === undefined) out.push(ps[i]!);
    else {
      out.push(v);
      i++;
    }
  }
  return out;
}

/** A reply with name slots written back and any `vslot K` left as the word's first spelling. */
export function fromDbValueSlots(text: string, map: DbValueSlotMap): string {
  return fromDbSlots(text, map).replace(new RegExp(`\\b${VALUE_SLOT}\\s*(\\d+)\\b`, 'gi'), (all, k: string) => map.forms[Number(k) - 1] ?? all);
}

/** DBBench's table, column and value slots. */
export const NAME_VALUE_SLOTS: Slotting<DbValueSlotMap> = {
  words: [TABLE_SLOT, COLUMN_SLOT, VALUE_SLOT],
  map: (messages, isToken) => dbValueSlotMap(messages, isToken ?? (() => true)),
  messages: dbValueSlotMessages,
  to: toDbValueSlots,
  from: fromDbValueSlots,
  pieces: expandValuePieces,
};
