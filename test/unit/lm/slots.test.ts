import test from 'ava';
import { bcRows, collectDecisions } from '../../../policies/targets/lm/bc.ts';
import { fromSlots, MAX_SLOTS, slotMap, slotMessages, SLOT_WORD, toSlots } from '../../../policies/targets/lm/slots.ts';
import { LmTokenizer } from '../../../policies/targets/lm/tokenizer.ts';
import { harvestWords } from '../../../policies/targets/lm/vocab.ts';
import type { ChatMessage } from '../../../harness/index.ts';

const results = 'Page 1 (Total results: 50) [SEP] Next > [SEP] B07B4KXQZV [SEP] Lodge Bedspread [SEP] $44.99 [SEP] B07WZBXSK3 [SEP] Travan Quilt [SEP] $64.99';

test('slots - ids of the newest product listing are numbered in page order, older ones after; the mapping round-trips', (t) => {
  const msgs: ChatMessage[] = [
    { role: 'system', content: 'You are shopping.' },
    { role: 'user', content: 'Instruction: [SEP] a queen bedspread [SEP] Search' },
    { role: 'assistant', content: 'click[B0000OLDID]' },
    { role: 'user', content: results },
  ];
  const map = slotMap(msgs);
  t.deepEqual(map.ids, ['B07B4KXQZV', 'B07WZBXSK3', 'B0000OLDID']);
  const shown = slotMessages(msgs, map);
  t.is(shown[3]!.content, results.replace('B07B4KXQZV', 'pslot 1').replace('B07WZBXSK3', 'pslot 2'));
  t.is(shown[2]!.content, 'click[pslot 3]');
  t.is(toSlots('click[B07WZBXSK3]', map), 'click[pslot 2]');
  // what the model writes (lower case, tokenizer spacing) maps back to the id
  t.is(fromSlots('click[pslot 2]', map), 'click[B07WZBXSK3]');
  t.is(fromSlots('click[pslot 9]', map), 'click[pslot 9]', 'an unknown slot stays as written');
  t.is(fromSlots('search[red shoes]', map), 'search[red shoes]');
  // prices, words and lower-case text are not ids
  t.deepEqual(slotMap([{ role: 'user', content: 'size 10 [SEP] $44.99 [SEP] b07b4kxqzv [SEP] ABCDEFGHIJ' }]).ids, []);
  const many = Array.from({ length: MAX_SLOTS + 5 }, (_, i) => `B0${String(i).padStart(8, '0')}`).join(' [SEP] ');
  t.is(slotMap([{ role: 'user', content: many }]).ids.length, MAX_SLOTS);
});

test('slots - WebShop rows with slots label clicks on products as pslot K, and the words hold the slot word', async (t) => {
  const words = [...(await harvestWords(['webshop'])), SLOT_WORD];
  const tok = new LmTokenizer(words);
  const ds = await collectDecisions({ env: 'webshop', episodes: 6, seed: 1, noise: 0 });
  const rows = bcRows(ds, tok, { maxLen: 256 }, { skills: 0, hint: 0, injected: 0 }, 1, { slots: true });
  const plain = bcRows(ds, tok, { maxLen: 256 }, { skills: 0, hint: 0, injected: 0 }, 1);
  const productClicks = ds.map((d, i) => [d, i] as const).filter(([d]) => /^click\[[A-Z0-9]{10}\]$/.test(d.action));
  t.true(productClicks.length >= 3);
  for (const [, i] of productClicks) {
    t.regex(tok.decode(rows[i]!.completion), /^click\[pslot \d+\]$/);
    t.true(rows[i]!.completion.length <= 6, 'a slot click is a few tokens');
    t.true(plain[i]!.completion.length > 10, 'a spelled id is many tokens');
  }
});
