import test from 'ava';
import { readFileSync } from 'node:fs';
import { Rng } from '../../../cluster/rng.ts';
import { canonicalJson, parsePatch, toPatch, validatePatch } from '../../../harness/index.ts';
import { ENGINEER_VOCAB, ENGINEER_VOCAB_SIZE, EOS_ID, MAX_COMPLETION_TOKENS, PATCH_OPEN_ID, PatchGrammar, allowedNext, engineerPromptTokens, packetNames, patchToTokens, tokensToPatch } from '../../../policies/engineer/patch-lang.ts';
import { EngineerError, VOCAB, VOCAB_SIZE, diagnose, parsePacket, teacherPropose, tokenId, type Packet } from '../../../policies/engineer/index.ts';

const ENVS = ['alfworld', 'dbbench', 'webshop'] as const;
/** failure packets of learned targets (hr1 packet show --json; test/fixtures/packets/README.md) */
const packets: Record<string, Packet> = Object.fromEntries(ENVS.map((e) => [e, parsePacket(JSON.parse(readFileSync(new URL(`../../fixtures/packets/${e}-lm.json`, import.meta.url), 'utf8')))]));

function withoutDescription(p: unknown): string {
  const { description: _d, ...rest } = toPatch(p);
  return canonicalJson(rest);
}

function sample(g: PatchGrammar, rng: Rng): number[] {
  const seq: number[] = [];
  for (;;) {
    const a = g.allowed(seq);
    if (a.length === 0) throw new Error(`dead end after ${seq.map((x) => ENGINEER_VOCAB[x]).join(' ')}`);
    const id = rng.pick(a);
    seq.push(id);
    if (id === EOS_ID) return seq;
  }
}

test('patch language - the engineer vocabulary is the packet vocabulary, then the grammar', (t) => {
  t.deepEqual(ENGINEER_VOCAB.slice(0, VOCAB_SIZE), [...VOCAB]);
  t.is(new Set(ENGINEER_VOCAB).size, ENGINEER_VOCAB_SIZE);
  t.is(PATCH_OPEN_ID, VOCAB_SIZE);
  t.is(VOCAB[tokenId('<ref:0>')], '<ref:0>');
});

test('patch language - 800 random walks through the grammar all decode into schema-valid patches within the budget', (t) => {
  const rng = new Rng(11);
  const kinds = new Set<string>();
  let reencoded = 0;
  for (let n = 0; n < 800; n++) {
    const names = packetNames(packets[ENVS[n % 3]!]!);
    const seq = sample(new PatchGrammar(names), rng);
    t.true(seq.length <= MAX_COMPLETION_TOKENS);
    const patch = tokensToPatch(seq, names);
    const r = parsePatch(patch);
    if (!r.ok) t.fail(JSON.stringify(r.issues));
    for (const x of patch.rules ?? []) kinds.add(`${x.hook}:${x.effect.type}`);
    for (const c of patch.code ?? []) kinds.add(`code:${c.hook}`);
    if ((patch.skills ?? []).length) kinds.add('skill');
    // what decodes encodes back, canonically, to the same patch (a random text may need more atoms
    // canonically than its sample used, `small` + `<glue>` + a phrase, and then exceed the text's 40)
    const again = patchToTokens(patch, names);
    if (again) {
      reencoded++;
      t.is(canonicalJson(tokensToPatch(again, names)), canonicalJson(patch));
    }
  }
  t.true(reencoded > 660, `${reencoded} of 800 re-encoded`);
  // every effect of every hook, code in every hook point it may sit in, skills
  for (const k of ['init:skill', 'init:tool_hint', 'init:note', 'preDecision:hint', 'preAction:block_and_prompt', 'preAction:rewrite_action', 'preAction:force_action', 'postFeedback:inject_hint', 'postFeedback:force_action', 'code:preDecision', 'code:preAction', 'code:postFeedback', 'skill']) t.true(kinds.has(k), k);
});

test('patch language - sampled patches pass the validator (compile in the sandbox, smoke episode)', async (t) => {
  const rng = new Rng(3);
  const names = packetNames(packets.alfworld!);
  const g = new PatchGrammar(names);
  for (let n = 0; n < 6; n++) {
    const patch = tokensToPatch(sample(g, rng), names);
    const r = await validatePatch(patch);
    t.true(r.ok, JSON.stringify(r.errors));
  }
});

test('patch language - every teacher proposal on the learned targets\' packets is a sentence of the grammar and decodes to itself', (t) => {
  let refs = 0;
  let rewrites = 0;
  for (const env of ENVS) {
    const p = packets[env]!;
    const names = packetNames(p);
    for (let seed = 0; seed < 8; seed++) {
      for (const pr of teacherPropose(p, { k: 6, seed })) {
        const ids = patchToTokens(pr.patch, names);
        t.truthy(ids, `${env} seed ${seed}: ${JSON.stringify(pr.patch).slice(0, 300)}`);
        if (!ids) continue;
        t.is(ids[0], PATCH_OPEN_ID);
        t.is(ids[ids.length - 1], EOS_ID);
        t.is(withoutDescription(tokensToPatch(ids, names)), withoutDescription(pr.patch));
        t.deepEqual(allowedNext(ids.slice(0, 1), engineerPromptTokens(p)).includes(ids[1]!), true);
        if (ids.some((i) => (ENGINEER_VOCAB[i] ?? '').startsWith('<ref:'))) refs++;
        if (/closest_admissible|escape_loop/.test(JSON.stringify(pr.patch))) rewrites++;
      }
    }
  }
  t.true(refs > 10, `${refs} proposals copy a name the packet showed`);
  t.true(rewrites > 5, `${rewrites} proposals rewrite actions`);
});

test('patch language - the prompt holds the packet: names, goals, excerpts, within 512 tokens, deterministically', (t) => {
  const p = packets.alfworld!;
  const prompt = engineerPromptTokens(p);
  t.true(prompt.length <= 512 && prompt.length > 300, `${prompt.length}`);
  t.deepEqual(engineerPromptTokens(p), prompt);
  t.true(prompt.every((i) => i >= 0 && i < VOCAB_SIZE));
  t.true(prompt.includes(tokenId('<names>')) && prompt.includes(tokenId('<ref:0>')));
  t.true(prompt.includes(tokenId('<goal>')) && prompt.includes(tokenId('<act>')) && prompt.includes(tokenId('<obs>')));
  // a packet with other episodes reads differently; one with no signals too
  const zeroed: Packet = { ...p, episodes: p.episodes.map((e) => ({ ...e, signals: { ...e.signals, noOps: 0, longestRun: 1, repeatedObservations: 0, repeatedActions: [] } })) };
  t.notDeepEqual(engineerPromptTokens(zeroed), prompt);
  t.notDeepEqual(engineerPromptTokens(packets.dbbench!), prompt);
  // the names the excerpts show, hallucinated ones included
  const names = packetNames(p);
  // where the excerpts showed an object of a failed goal's kind (a batch-specific finding)
  const seen = diagnose(p).find((f) => f.kind === 'seen_target');
  t.truthy(seen);
  t.true(seen!.seen!.some((x) => names.includes(x.object) && names.includes(x.place)));
  // the names section starts with the first sighting: its goal, object and place are <ref:0..2>
  const first = seen!.seen![0]!;
  t.deepEqual(names.slice(0, 3), [first.goal, first.object, first.place]);
  const hall = diagnose(p).find((f) => f.kind === 'hallucinated');
  t.truthy(hall);
  t.true(hall!.names!.some((n) => names.includes(n)));
  t.true(packetNames(packets.dbbench!).length > 3);
});

test('patch language - the grammar allows only the prompt\'s references', (t) => {
  const names = ['drawer 5', 'shelf 1', 'mug 2'];
  const open = [PATCH_OPEN_ID, ENGINEER_VOCAB.indexOf('<skill>')];
  const prompt = [tokenId('<names>'), tokenId('<ref:0>'), tokenId('<ref:1>'), tokenId('<ref:2>')];
  const allowed = allowedNext(open, prompt);
  t.true(allowed.includes(tokenId('<ref:2>')));
  t.false(allowed.includes(tokenId('<ref:3>')));
  const ids = patchToTokens({ skills: ['There is no drawer 5 in this room.'] }, names)!;
  t.true(ids.includes(tokenId('<ref:0>')));
  t.is(tokensToPatch(ids, names).skills![0], 'There is no drawer 5 in this room.');
});

test('patch language - bad tokens are a typed error; a hand-written code hook is outside the space', (t) => {
  const e = t.throws(() => tokensToPatch([PATCH_OPEN_ID, 5, EOS_ID]), { instanceOf: EngineerError });
  t.is(e!.code, 'ENGINEER_BAD_TOKENS');
  t.throws(() => tokensToPatch([PATCH_OPEN_ID]), { message: /no <eos>/ });
  t.is(patchToTokens({ code: [{ hook: 'preDecision', source: 'function hook(ctx, nb) { return null; }' }] }), null);
  t.is(patchToTokens({ rules: [{ hook: 'preDecision', when: { path: 'nb.mine', gt: 1 }, effect: { type: 'hint', message: 'x' } }] }), null, 'a path the grammar has no token for');
});

test('patch language - the examples of docs/HARNESS.md are in the space', (t) => {
  const md = readFileSync(new URL('../../../docs/HARNESS.md', import.meta.url), 'utf8');
  const blocks = [...md.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as unknown);
  t.true(blocks.length >= 1);
  for (const b of blocks) {
    const ids = patchToTokens(b);
    t.truthy(ids, JSON.stringify(b).slice(0, 200));
    t.is(withoutDescription(tokensToPatch(ids!)), withoutDescription(b));
  }
});
