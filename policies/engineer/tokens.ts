/**
 * The token rendering of a packet, for the built-in engineer: a small fixed vocabulary and a
 * deterministic tokenizer. The vocabulary is part of the model's contract: ids never change
 * within a VOCAB_VERSION (append-only across versions).
 *
 * Text is lower-cased and split into words ([a-z]+), numbers ([0-9]+) and single symbols.
 * A word in the vocabulary is one token; any other word or number is `<w>` then its spelling
 * (`#a` … `#z`, `#0` … `#9`), which `decodeTokens` joins back. Numbers 0–99 are one token.
 * Other characters are `<unk>`. So encoding loses
 * only case, whitespace and characters outside ASCII.
 */
import type { Packet, PacketEpisode, PacketStatus } from './packet.ts';

export const VOCAB_VERSION = 2;

/** Names a packet shows, referred to by `<ref:k>` in the prompt and in a patch: at most @default 32 */
export const MAX_REFS = 32;
/** v2: the names section of the engineer's prompt and the references into it (appended: v1 ids are unchanged) */
export const REF_TOKENS = ['<names>', ...Array.from({ length: MAX_REFS }, (_, i) => `<ref:${i}>`)];

/** structure tokens */
export const SPECIAL_TOKENS = [
  '<pad>', '<bos>', '<eos>', '<unk>', '<ep>', '<type>', '<goal>', '<sig>', '<hist>', '<act>', '<obs>', '<omit>', '<cut>', '<w>',
  '<env:alfworld>', '<env:dbbench>', '<env:webshop>', '<env:other>',
  '<status:failed>', '<status:step_limit>', '<status:invalid_format>',
  '<sig:repeat>', '<sig:run>', '<sig:noop>', '<sig:invalid_format>', '<sig:sql_error>', '<sig:invalid_click>', '<sig:repeat_obs>',
  '<flag:F>', '<flag:R>', '<flag:I>', '<flag:N>', '<flag:S>',
  '<reward:0>', '<reward:1>', '<reward:2>', '<reward:3>', '<reward:4>', '<reward:5>', '<reward:6>', '<reward:7>', '<reward:8>', '<reward:9>',
] as const;

/** counts: `<n:0>` … `<n:63>`, `<n:64+>` */
export const COUNT_TOKENS = [...Array.from({ length: 64 }, (_, i) => `<n:${i}>`), '<n:64+>'];

/** ALFWorld objects and receptacles (from the games' object lists), verbs and observation words */
const ALFWORLD_WORDS = `agent alarmclock apple armchair baseballbat basketball bathtub bathtubbasin bed blinds book boots bowl box bread
butterknife cabinet candle cart cd cellphone chair cloth coffeemachine coffeetable countertop creditcard cup curtains desk desklamp
diningtable dishsponge drawer dresser egg floorlamp footstool fork fridge garbagecan glassbottle handtowel handtowelholder houseplant
kettle keychain knife ladle laptop laundryhamper laundryhamperlid lettuce lightswitch microwave mirror mug newspaper ottoman painting pan
papertowel papertowelroll pen pencil peppershaker pillow plate plunger poster pot potato remotecontrol safe saltshaker scrubbrush shelf
showerdoor showerglass sidetable sink sinkbasin soapbar soapbottle sofa spatula spoon spraybottle statue stoveburner stoveknob teddybear
television tennisracket tissuebox toaster toilet toiletpaper toiletpaperhanger toiletpaperroll tomato towel towelholder tvstand vase
watch wateringcan window winebottle
go to take from put in on open close toggle clean heat cool use examine look inventory think with under
nothing happens you see arrive at is are closed empty pick up the a an some and it its of your task middle room around
turn looking quickly glance find two hot cold cool clean desklamp light`;

/** SQL and DBBench protocol words */
const SQL_WORDS = `select from where insert into values update set delete count max min avg sum group by order having limit asc desc
and or not null like as distinct join inner left right outer union table tables column columns row rows show describe create primary
key between case when then else end is in exists operation answer final action sql query error syntax near line check manual
corresponds server version right doesn unknown field list exist database mysql mariadb duplicate entry value type headers name`;

/** WebShop words */
const WEBSHOP_WORDS = `search click buy now back prev next page item items product products description features reviews attributes
size color price options option instruction results result total shop purchase buying bought cheaper lower than dollars pack count
small medium large women men black white blue red green pink gray grey brown`;

/** packet words and common English */
const PACKET_WORDS = `failure packet env batch episodes episode won failed errors shown selection round robin task types type sorted
name within lowest reward first ties id seed signals repeated actions repeated observations runs longest run noop invalid formats
format clicks step limit steps history excerpt left out flags forced hook rewritten happened goal no none total
i need think carefully about where object could be probably one cabinets drawers or maybe consider each place turn remember what have
seen before deciding next this will know query run can do did not was were has had should must try again different same other than
for if but so all any only here there which who how many much more most less least what when`;

function words(...lists: string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const w of lists.join(' ').split(/\s+/)) {
    if (!/^[a-z]+$/.test(w) || seen.has(w)) continue;
    seen.add(w);
    out.push(w);
  }
  return out;
}

/** whole-word tokens, in a fixed order */
export const WORD_TOKENS = words(ALFWORLD_WORDS, SQL_WORDS, WEBSHOP_WORDS, PACKET_WORDS);
/** numbers 0–99 */
export const NUMBER_TOKENS = Array.from({ length: 100 }, (_, i) => String(i));
/** spelling fallback for other words and numbers */
export const SPELL_TOKENS = [...'abcdefghijklmnopqrstuvwxyz0123456789'].map((c) => `#${c}`);
/** single symbols */
export const SYMBOL_TOKENS = [...`.,:;!?'"()[]{}<>=*/-_+%$&#@\`~|\\^…×`];

/** The vocabulary: id = index. */
export const VOCAB: readonly string[] = Object.freeze([...SPECIAL_TOKENS, ...COUNT_TOKENS, ...WORD_TOKENS, ...NUMBER_TOKENS, ...SPELL_TOKENS, ...SYMBOL_TOKENS, ...REF_TOKENS]);
export const VOCAB_SIZE = VOCAB.length;
const ID = new Map(VOCAB.map((t, i) => [t, i]));

/** The id of a token of the vocabulary (throws on a token that is not in it). */
export function tokenId(token: string): number {
  const id = ID.get(token);
  if (id === undefined) throw new RangeError(`"${token}" is not in the engineer vocabulary (v${VOCAB_VERSION}, ${VOCAB_SIZE} tokens)`);
  return id;
}

export const PAD_ID = tokenId('<pad>');
export const BOS_ID = tokenId('<bos>');
export const EOS_ID = tokenId('<eos>');
export const UNK_ID = tokenId('<unk>');
const SPELL_START = tokenId('<w>');

/** Encode free text (see the module comment for the rules). */
export function encodeText(text: string): number[] {
  const out: number[] = [];
  for (const m of text.toLowerCase().matchAll(/[a-z]+|[0-9]+|\S/g)) {
    const w = m[0];
    const id = ID.get(w);
    if (id !== undefined && !w.startsWith('<') && !w.startsWith('#')) {
      out.push(id);
    } else if (/^[a-z]+$/.test(w) || /^[0-9]+$/.test(w)) {
      // <w> starts a spelled word, so two spelled words in a row stay apart
      out.push(SPELL_START);
      for (const c of w) out.push(ID.get(`#${c}`)!);
    } else {
      out.push(ID.get(w) ?? UNK_ID);
    }
  }
  return out;
}

/** Tokens back to text: words joined by spaces, spelled words rejoined. */
export function decodeTokens(ids: readonly number[]): string {
  const parts: string[] = [];
  let spelled = '';
  for (const id of ids) {
    const t = VOCAB[id] ?? '<unk>';
    if (t.length === 2 && t.startsWith('#') && t !== '##') {
      spelled += t[1];
      continue;
    }
    if (t === '<w>') {
      if (spelled) parts.push(spelled);
      spelled = '';
      continue;
    }
    if (spelled) parts.push(spelled);
    spelled = '';
    parts.push(t);
  }
  if (spelled) parts.push(spelled);
  return parts.join(' ');
}

/** The count token `<n:k>` for n (`<n:64+>` from 64 on). */
export function countToken(n: number): number {
  return count(n);
}

function count(n: number): number {
  return tokenId(n >= 64 ? '<n:64+>' : `<n:${Math.max(0, Math.floor(n))}>`);
}

export function envToken(env: string): number {
  return ID.get(`<env:${env}>`) ?? tokenId('<env:other>');
}

/** One episode of the packet as tokens (see packetTokens). */
export function episodeTokens(e: PacketEpisode): number[] {
  const out: number[] = [tokenId('<ep>'), envToken(e.env), tokenId('<type>'), ...encodeText(e.taskType.replace(/[_-]/g, ' '))];
  out.push(tokenId(`<status:${e.status satisfies PacketStatus}>`), tokenId(`<reward:${Math.min(9, Math.max(0, Math.floor(e.reward * 10)))}>`), count(e.steps));
  out.push(tokenId('<goal>'), ...encodeText(e.goal));
  const s = e.signals;
  out.push(tokenId('<sig>'));
  for (const r of s.repeatedActions) out.push(tokenId('<sig:repeat>'), count(r.count), ...encodeText(r.action));
  const pairs: [string, number][] = [
    ['<sig:run>', s.longestRun],
    ['<sig:noop>', s.noOps],
    ['<sig:invalid_format>', s.invalidFormats],
    ['<sig:sql_error>', s.sqlErrors],
    ['<sig:invalid_click>', s.invalidClicks],
    ['<sig:repeat_obs>', s.repeatedObservations],
  ];
  for (const [t, n] of pairs) if (n > 0) out.push(tokenId(t), count(n));
  out.push(tokenId('<hist>'));
  e.excerpt.forEach((l, i) => {
    const gap = i === 0 ? l.from > 1 : e.excerpt[i - 1]!.to + 1 < l.from;
    if (gap && e.omitted > 0) out.push(tokenId('<omit>'), count(e.omitted));
    out.push(tokenId('<act>'), count(l.to - l.from + 1), ...encodeText(l.action), tokenId('<obs>'), ...encodeText(l.observation));
    for (const f of l.flags) out.push(ID.get(`<flag:${f}>`) ?? UNK_ID);
  });
  return out;
}

/** Tokens a packet is cut to. @default 4096 */
export const DEFAULT_MAX_PACKET_TOKENS = 4096;

/**
 * The token rendering of a packet: `<bos> <env:…> <n:won> <n:failed> <n:shown>`, then per episode
 * `<ep> <env:…> <type> words <status:…> <reward:k> <n:steps> <goal> words <sig> (signal count)…
 * <hist> (<act> <n:run> words <obs> words flags)…`, then `<eos>`. Each episode gets an equal share
 * of `maxTokens`; an episode over its share is cut and ends with `<cut>`. Deterministic.
 */
export function packetTokens(p: Packet, maxTokens = DEFAULT_MAX_PACKET_TOKENS): number[] {
  const head = [BOS_ID, envToken(p.env), count(p.batch.won), count(p.batch.failed), count(p.episodes.length)];
  const room = maxTokens - head.length - 1;
  if (room < 8) throw new RangeError(`packetTokens: maxTokens must be at least ${head.length + 9}, got ${maxTokens}`);
  const share = p.episodes.length > 0 ? Math.floor(room / p.episodes.length) : room;
  const out = [...head];
  for (const e of p.episodes) {
    const t = episodeTokens(e);
    if (t.length > share) out.push(...t.slice(0, share - 1), tokenId('<cut>'));
    else out.push(...t);
  }
  out.push(EOS_ID);
  return out;
}
