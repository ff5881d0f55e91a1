/**
 * The tokenizer of an engineer checkpoint in the Hugging Face layout (`tokenizer.json`,
 * `tokenizer_config.json`), read in Node with `@huggingface/tokenizers`, and its chat template
 * rendered with `@huggingface/jinja`. Pure: no model, no Python.
 *
 * **The end token** (`eosId`): the id the engineer writes to end its answer, the last id of every
 * completion. It is the config's `eos_token`, except for a chat model whose template closes a turn
 * with another special token of the vocabulary (one of {@link TURN_END_TOKENS}: Qwen's `<|im_end|>`,
 * Llama 3's `<|eot_id|>`, Gemma's `<end_of_turn>`, Phi's `<|end|>`): then that turn-end token, the
 * first of the list the template names. So a Qwen base checkpoint whose `eos_token` is
 * `<|endoftext|>` ends its patches with `<|im_end|>`, as its chat turns end.
 *
 * **The chat template**: the config's `chat_template` (a string, or the `default` entry of a list of
 * named templates), rendered with the messages, `add_generation_prompt: true`, `bos_token`,
 * `eos_token` and `enable_thinking: false` (Qwen3 then writes an empty think block, so the
 * answer starts right away). A config without one gets the plain fallback: the `bos_token` (when
 * the tokenizer has one), one `role: content` line per message, then `assistant:` and a newline.
 *
 * `padId`: the config's `pad_token`, else the end token. `bosId`: the config's `bos_token`, or null.
 * `vocabSize`: the largest id of the vocabulary and the added tokens, plus one (a checkpoint's
 * embedding matrix may be larger: rows past it are never written).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { EngineerError } from '../errors.ts';

/** One chat message. */
export interface ChatTurn {
  role: string;
  content: string;
}

/** An engineer checkpoint's tokenizer, as the Node side uses it. */
export interface HfTokenizer {
  /** the folder it was read from (absolute) */
  readonly dir: string;
  /** text → ids, without special tokens added around it (special tokens written in the text are read as such) */
  encode(text: string): number[];
  /** ids → text (special tokens kept) */
  decode(ids: readonly number[]): string;
  /** largest id of the vocabulary and the added tokens, plus one */
  readonly vocabSize: number;
  /** the id that ends a completion (module comment: the turn-end rule) */
  readonly eosId: number;
  /** its text, e.g. `<|im_end|>` */
  readonly eosToken: string;
  readonly bosId: number | null;
  readonly padId: number;
  /** `model` when the config has a chat template, `fallback` when the plain one is used */
  readonly template: 'model' | 'fallback';
  /** the messages as the model reads them: the chat template applied, the generation prompt added */
  chat(messages: readonly ChatTurn[]): string;
}

/** Special tokens that close a chat turn, by preference; the first one a chat template names (and the vocabulary has) is the end token. */
export const TURN_END_TOKENS = ['<|im_end|>', '<|eot_id|>', '<end_of_turn>', '<|end|>'] as const;

const FIX = 'a Hugging Face checkpoint folder needs the tokenizer.json and tokenizer_config.json that tokenizer.save_pretrained(dir) writes';

function readJson(dir: string, file: string): Record<string, unknown> {
  const path = join(dir, file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new EngineerError('ENGINEER_BAD_OPTION', `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); ${FIX}`, { field: file, cause: e });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new EngineerError('ENGINEER_BAD_OPTION', `${path} is not JSON (${(e as Error).message}); write it again with tokenizer.save_pretrained(dir)`, { field: file, cause: e });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new EngineerError('ENGINEER_BAD_OPTION', `${path} is not a JSON object; write it again with tokenizer.save_pretrained(dir)`, { field: file });
  return json as Record<string, unknown>;
}

/** a config's token entry: a string, `{content}`, or nothing */
function tokenText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return null;
}

function chatTemplateOf(tc: Record<string, unknown>, path: string): string | null {
  const ct = tc.chat_template;
  if (ct === undefined || ct === null) return null;
  if (typeof ct === 'string') return ct;
  if (Array.isArray(ct)) {
    const named = ct as { name?: unknown; template?: unknown }[];
    const d = named.find((x) => x && x.name === 'default') ?? named[0];
    if (d && typeof d.template === 'string') return d.template;
  }
  throw new EngineerError('ENGINEER_BAD_OPTION', `${path}: chat_template is neither a string nor a list of {name, template}; fix or remove it (without one the plain role: content template is used)`, { field: 'tokenizer_config.json' });
}

const cache = new Map<string, HfTokenizer>();

/**
 * The tokenizer of the checkpoint folder `dir` (cached per folder). Throws ENGINEER_BAD_OPTION,
 * `field` the file, when tokenizer.json or tokenizer_config.json is missing or malformed, or the
 * tokenizer has no end token.
 */
export function loadHfTokenizer(dir: string): HfTokenizer {
  const abs = resolve(dir);
  const hit = cache.get(abs);
  if (hit) return hit;
  const tj = readJson(abs, 'tokenizer.json');
  const tc = readJson(abs, 'tokenizer_config.json');
  const cfgPath = join(abs, 'tokenizer_config.json');
  let tok: Tokenizer;
  try {
    tok = new Tokenizer(tj, tc);
  } catch (e) {
    throw new EngineerError('ENGINEER_BAD_OPTION', `${join(abs, 'tokenizer.json')}: @huggingface/tokenizers cannot build this tokenizer (${(e as Error).message}); ${FIX}`, { field: 'tokenizer.json', cause: e });
  }
  const vocab = tok.get_vocab(true);
  let maxId = -1;
  for (const id of vocab.values()) if (id > maxId) maxId = id;
  for (const id of tok.get_added_tokens_decoder().keys()) if (id > maxId) maxId = id;
  const idOf = (t: string | null): number | null => (t === null ? null : (vocab.get(t) ?? tok.token_to_id(t) ?? null));

  const template = chatTemplateOf(tc, cfgPath);
  const eosCfg = tokenText(tc.eos_token);
  let eosToken = eosCfg;
  if (template) {
    const turnEnd = TURN_END_TOKENS.find((t) => template.includes(t) && idOf(t) !== null);
    if (turnEnd) eosToken = turnEnd;
  }
  const eosId = idOf(eosToken);
  if (eosToken === null || eosId === null) {
    throw new EngineerError('ENGINEER_BAD_OPTION', `${cfgPath}: ${eosToken === null ? 'no eos_token' : `eos_token ${JSON.stringify(eosToken)} is not in the vocabulary`}; the engineer needs an end token: set eos_token to the token that ends the model's answers`, { field: 'tokenizer_config.json' });
  }
  const bosToken = tokenText(tc.bos_token);
  const bosId = idOf(bosToken);
  const padId = idOf(tokenText(tc.pad_token)) ?? eosId;

  let compiled: Template | null = null;
  if (template) {
    try {
      compiled = new Template(template);
    } catch (e) {
      throw new EngineerError('ENGINEER_BAD_OPTION', `${cfgPath}: the chat_template does not parse (${(e as Error).message}); fix or remove it (without one the plain role: content template is used)`, { field: 'tokenizer_config.json', cause: e });
    }
  }
  const chat = (messages: readonly ChatTurn[]): string => {
    if (!compiled) return `${bosId !== null && bosToken ? bosToken : ''}${messages.map((m) => `${m.role}: ${m.content}\n`).join('')}assistant:\n`;
    try {
      return compiled.render({ messages: messages.map((m) => ({ role: m.role, content: m.content })), add_generation_prompt: true, bos_token: bosToken ?? '', eos_token: eosCfg ?? eosToken, enable_thinking: false });
    } catch (e) {
      throw new EngineerError('ENGINEER_BAD_OPTION', `${cfgPath}: the chat_template failed to render (${(e as Error).message})`, { field: 'tokenizer_config.json', cause: e });
    }
  };
  const out: HfTokenizer = {
    dir: abs,
    encode: (text) => tok.encode(text, { add_special_tokens: false }).ids,
    decode: (ids) => tok.decode(ids as number[]),
    vocabSize: maxId + 1,
    eosId,
    eosToken,
    bosId,
    padId,
    template: compiled ? 'model' : 'fallback',
    chat,
  };
  cache.set(abs, out);
  return out;
}
