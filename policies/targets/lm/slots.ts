/**
 * Product slots (WebShop): a product id such as `B07B4KXQZV` is ten characters the tokenizer can
 * only spell, and a small model copies eleven spelled tokens badly. With slots on, the context
 * shows each id as `pslot K` — K its rank on the newest page that lists products (then older
 * ones, newest first) — and a `pslot K` the model writes is mapped back to that id. The model
 * still writes text (`click[pslot 1]`); only the ids are renamed, per decision.
 */
import type { ChatMessage } from '../../../harness/index.ts';

/** the word a slot is written with (followed by its number) */
export const SLOT_WORD = 'pslot';
/** ids beyond this many stay as they are. @default 20 */
export const MAX_SLOTS = 20;

/** ten upper-case letters and digits, at least one digit (ASINs, ISBN-10s) */
const ID_RE = /\b(?=[A-Z]*\d)[A-Z0-9]{10}\b/g;

/** One decision's renaming: id → slot number and back. */
export interface SlotMap {
  readonly ids: readonly string[];
  readonly slotOf: ReadonlyMap<string, number>;
}

/** The slots of a context: ids of the newest message that has any, in order, then older messages' ids, newest first. */
export function slotMap(messages: readonly ChatMessage[]): SlotMap {
  const ids: string[] = [];
  const slotOf = new Map<string, number>();
  for (let i = messages.length - 1; i >= 0 && ids.length < MAX_SLOTS; i--) {
    for (const m of messages[i]!.content.matchAll(ID_RE)) {
      if (slotOf.has(m[0]) || ids.length >= MAX_SLOTS) continue;
      ids.push(m[0]);
      slotOf.set(m[0], ids.length);
    }
  }
  return { ids, slotOf };
}

/** `text` with every mapped id written as `pslot K`. */
export function toSlots(text: string, map: SlotMap): string {
  return text.replace(ID_RE, (id) => {
    const k = map.slotOf.get(id);
    return k === undefined ? id : `${SLOT_WORD} ${k}`;
  });
}

/** The messages with ids written as slots. */
export function slotMessages(messages: readonly ChatMessage[], map: SlotMap): ChatMessage[] {
  return messages.map((m) => ({ ...m, content: toSlots(m.content, map) }));
}

/** A model's text with `pslot K` written back as the id it stands for (unknown slots stay). */
export function fromSlots(text: string, map: SlotMap): string {
  return text.replace(new RegExp(`\\b${SLOT_WORD}\\s*(\\d+)\\b`, 'gi'), (all, k: string) => map.ids[Number(k) - 1] ?? all);
}

/** An env's slot renaming, as the behaviour-cloning rows and the served model use it. */
export interface Slotting<M = unknown> {
  /** the words slots are written with (added to the vocabulary) */
  readonly words: readonly string[];
  /** `isToken`: whether a lower-case word is one token of the model's vocabulary (value slots need it) */
  map(messages: readonly ChatMessage[], isToken?: (lowerWord: string) => boolean): M;
  messages(messages: readonly ChatMessage[], map: M): ChatMessage[];
  /** a label (the teacher's action) in slots */
  to(text: string, map: M): string;
  /** a model's reply with its slots written back */
  from(text: string, map: M): string;
  /** a reply's words and symbols with slots expanded before it is rendered (DBBench's value slots) */
  pieces?(ps: readonly string[], map: M): string[];
}

/** WebShop's product slots. */
export const PRODUCT_SLOTS: Slotting<SlotMap> = { words: [SLOT_WORD], map: slotMap, messages: slotMessages, to: toSlots, from: fromSlots };
