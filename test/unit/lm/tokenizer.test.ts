import test from 'ava';
import { collectDecisions } from '../../../policies/targets/lm/bc.ts';
import { buildContext, compactRoom, ELIDED_TOKENS, segmentMessages } from '../../../policies/targets/lm/context.ts';
import { BOS_ID, LmTokenizer } from '../../../policies/targets/lm/tokenizer.ts';
import { harvestWords } from '../../../policies/targets/lm/vocab.ts';
import type { ChatMessage } from '../../../harness/index.ts';

// asked twice at once, as two builds started together ask: one harvest answers both
const [words, askedAtOnce] = await Promise.all([harvestWords(['alfworld']), harvestWords(['alfworld'])]);
const tok = new LmTokenizer(words);
const decisions = await collectDecisions({ env: 'alfworld', episodes: 12, seed: 5 });

test('vocab - harvested deterministically, covers ALFWorld words and hint phrasings', async (t) => {
  t.deepEqual(await harvestWords(['alfworld']), words);
  t.is(askedAtOnce, words, 'two callers at once share one harvest (the same list, not two equal ones)');
  t.true(words.length > 200 && words.length < 1000, `${words.length} words`);
  for (const w of ['go', 'cabinet', 'desklamp', 'admissible', 'notes', 'loop', 'skills', 'hint']) t.true(words.includes(w), w);
});

test('tokenizer - every expert action round-trips exactly', (t) => {
  const actions = new Set(decisions.flatMap((d) => [d.action, ...d.admissible]));
  t.true(actions.size > 100);
  for (const a of actions) t.is(tok.decode(tok.encode(a)), a.toLowerCase(), a);
});

test('tokenizer - observations round-trip up to case, with almost no spelled words', (t) => {
  let spelled = 0;
  let total = 0;
  for (const d of decisions) {
    const text = d.messages[d.messages.length - 1]!.content;
    const ids = tok.encode(text);
    total += ids.length;
    spelled += ids.filter((i) => i === tok.special('<w>')).length;
    t.is(tok.decode(ids), text.toLowerCase().replace(/\s+/g, ' ').trim());
  }
  t.true(spelled / total < 0.01, `${spelled}/${total} spelled`);
});

test('tokenizer - unknown words and numbers are spelled and come back; WebShop actions keep their brackets', (t) => {
  const text = 'click[b07xyzq9k] search[zyzzyva 3-pack, 12345 ounce]';
  const ids = tok.encode(text);
  t.true(ids.includes(tok.special('<w>')));
  t.is(tok.decode(ids), 'click[b07xyzq9k] search[zyzzyva 3-pack, 12345 ounce]');
  t.is(tok.decode(tok.encode('put mug 1 in/on shelf 2')), 'put mug 1 in/on shelf 2');
  t.is(tok.decode(tok.encode('think: the mug is probably in the cabinet.')), 'think: the mug is probably in the cabinet.');
});

function longConversation(n: number): ChatMessage[] {
  const d = decisions.find((x) => x.messages.length > 8) ?? decisions[decisions.length - 1]!;
  const msgs = d.messages.map((m) => ({ ...m }));
  for (let i = 0; i < n; i++) msgs.push({ role: 'assistant', content: `go to cabinet ${i + 1}` }, { role: 'user', content: `The cabinet ${i + 1} is closed.` });
  return msgs;
}

test('context - always fits maxLen minus the action room, starts with BOS and ends with <act>', (t) => {
  for (const maxLen of [64, 128, 192, 256, 384]) {
    for (const d of [...decisions, { messages: longConversation(60) }]) {
      const ids = buildContext(d.messages, tok, { maxLen });
      t.true(ids.length <= maxLen - 20, `maxLen ${maxLen}: ${ids.length}`);
      t.is(ids[0], BOS_ID);
      t.is(ids[ids.length - 1], tok.special('<act>'));
    }
  }
});

test('context - keeps the instruction head, the goal, skills, the hint and the newest turns; marks the cut', (t) => {
  const msgs = longConversation(60);
  msgs[0] = { role: 'system', content: `${msgs[0]!.content}\n\nSkills:\n1. Open a closed receptacle before you look inside.` };
  msgs.push({ role: 'user', content: 'Hint: Admissible actions: go to drawer 4, open cabinet 60.' });
  const ids = buildContext(msgs, tok, { maxLen: 256 });
  const text = tok.decode(ids);
  const seg = segmentMessages(msgs);
  t.true(seg.goal.length > 5);
  t.true(text.includes(tok.decode(tok.encode(seg.goal))), 'goal kept');
  t.true(text.startsWith('interact with a household'), 'instruction head kept');
  t.true(text.includes('open a closed receptacle'), 'skills kept');
  t.true(text.includes('admissible actions: go to drawer 4, open cabinet 60.'), 'hint kept');
  t.true(text.includes('the cabinet 60 is closed.'), 'newest observation kept');
  t.false(text.includes('go to cabinet 2 '), 'old turns dropped');
  t.true(ids.includes(tok.special('<cut>')));
  t.is(ids.filter((i) => i === tok.special('<hint>')).length, 1);
});

test('context - a user turn after a user turn is read as an injected hint', (t) => {
  const seg = segmentMessages([
    { role: 'system', content: 'Do things.' },
    { role: 'user', content: 'You see a desk 1.\nYour task is to: put a pen in desk.' },
    { role: 'assistant', content: 'go to desk 1' },
    { role: 'user', content: 'Nothing happens.' },
    { role: 'user', content: 'That had no effect.' },
    { role: 'user', content: 'Hint: try open drawer 1' },
  ]);
  t.is(seg.goal, 'put a pen in desk.');
  t.deepEqual(seg.turns.map((x) => x.kind), ['act', 'obs', 'hint', 'hint']);
  t.is(seg.turns[3]!.text, 'try open drawer 1');
});

test('context - observation masking (elide): old observations and hints keep their first tokens, the newest stay whole, more actions fit', (t) => {
  const msgs = longConversation(60);
  const act = tok.special('<act>');
  const plain = buildContext(msgs, tok, { maxLen: 256 });
  const masked = buildContext(msgs, tok, { maxLen: 256, elide: 2 });
  t.true(masked.length <= 236);
  // more of an episode's actions are in the window (the teacher decision with the longest history)
  const acts = (ids: number[]): number => ids.filter((i) => i === act).length;
  t.true(acts(masked) > acts(plain), `${acts(masked)} vs ${acts(plain)} actions`);
  const long = decisions.reduce((a, d) => (d.messages.length > a.messages.length ? d : a));
  const [p, m] = [buildContext(long.messages, tok, { maxLen: 192 }), buildContext(long.messages, tok, { maxLen: 192, elide: 2 })];
  t.true(acts(m) >= acts(p) + 2, `${acts(m)} vs ${acts(p)} actions of ${long.actions.length}`);
  // the two newest observations are whole; an older one keeps ELIDED_TOKENS tokens
  const turns = (ids: number[]): number[][] => {
    const out: number[][] = [];
    for (const id of ids) {
      if (id === tok.special('<obs>') || id === act || id === tok.special('<hint>')) out.push([id]);
      else out.at(-1)?.push(id);
    }
    return out;
  };
  const obs = turns(masked).filter((x) => x[0] === tok.special('<obs>')).slice(1); // the first is the room
  t.true(obs.length >= 4);
  for (const o of obs.slice(0, -2)) t.true(o.length - 1 <= ELIDED_TOKENS, `elided turn of ${o.length - 1} tokens`);
  t.deepEqual(obs.slice(-2).map((o) => tok.decode(o.slice(1))), msgs.filter((m) => m.role === 'user').slice(-2).map((m) => tok.decode(tok.encode(m.content).slice(0, 96))));
  // off by default: the same window as before
  t.deepEqual(buildContext(msgs, tok, { maxLen: 256, elide: 0 }), plain);
});

test('context - compactRoom: the room listing grouped by kind is lossless and fits where the plain one was cut', (t) => {
  const room = 'you see a drawer 11, a drawer 10, a drawer 2, a drawer 1, a bed 1, a desk 1, a drawer 3, a shelf 4, a shelf 2, and a sidetable 1.';
  t.is(compactRoom(room), 'you see drawer 1-3 10-11, bed 1, desk 1, shelf 2 4, sidetable 1.');
  // lossless: the same receptacles, each once
  const expand = (c: string): string[] =>
    c.replace(/^you see |\.$/g, '').split(', ').flatMap((g) => {
      const [kind, ...parts] = g.split(' ');
      return parts.flatMap((p) => {
        const [a, b] = p.split('-').map(Number);
        return Array.from({ length: (b ?? a!) - a! + 1 }, (_, i) => `${kind} ${a! + i}`);
      });
    });
  const items = room.replace(/^you see |\.$/g, '').split(/, (?:and )?/).map((x) => x.replace(/^a /, ''));
  t.deepEqual(expand(compactRoom(room)).sort(), items.sort());
  // not a listing: unchanged
  for (const x of ['On the desk 1, you see nothing.', 'you see a desk.', '']) t.is(compactRoom(x), x);
  // every teacher room: the whole listing fits the window's room share, where the plain one often did not
  let cutPlain = 0;
  for (const d of decisions) {
    const r = segmentMessages(d.messages).room;
    t.true(tok.encode(compactRoom(r)).length <= Math.floor(236 * 0.3), compactRoom(r));
    if (tok.encode(r).length > Math.floor(236 * 0.3)) cutPlain++;
    t.deepEqual(expand(compactRoom(r).split('\n')[0]!).sort(), r.split('\n')[0]!.replace(/^you see |\.$/g, '').split(/, (?:and )?/).map((x) => x.replace(/^an? /, '')).sort());
  }
  t.true(cutPlain > 0, 'some plain room listings are over the room share');
  // in the window: on (the compact listing) and off (the plain one, as before)
  const d = decisions.find((x) => tok.encode(segmentMessages(x.messages).room).length > 80)!;
  t.true(tok.decode(buildContext(d.messages, tok, { maxLen: 256, compactRoom: true })).includes(compactRoom(segmentMessages(d.messages).room).toLowerCase().slice(0, -1)));
  t.deepEqual(buildContext(d.messages, tok, { maxLen: 256, compactRoom: false }), buildContext(d.messages, tok, { maxLen: 256 }));
});
