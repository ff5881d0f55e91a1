import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { validatePatch } from '../../../harness/index.ts';
import { COMPONENT_BASE_ID, ENGINEER_VOCAB_SIZE, EOS_ID, LIBRARY, MAX_COMPONENTS, PATCH_OPEN_ID, allowedNext, engineerPromptTokens, patchToTokens, tokensToPatch } from '../../../policies/engineer/patch-lang.ts';
import { extractPacket, teacherPropose, VOCAB_SIZE } from '../../../policies/engineer/index.ts';
import { loadGames } from '../../../envs/alfworld/index.ts';
import { alfworldEnv } from '../../../envs/alfworld/index.ts';
import { runEpisode } from '../../../harness/index.ts';
import { simModel } from '../../../policies/targets/sim/sim.ts';

test('patch language - the library holds the teacher\'s components, after the packet vocabulary', (t) => {
  t.true(LIBRARY.length >= 30);
  t.is(PATCH_OPEN_ID, VOCAB_SIZE);
  t.is(ENGINEER_VOCAB_SIZE, VOCAB_SIZE + 1 + LIBRARY.length);
  t.true(LIBRARY.some((x) => x.kind === 'skill') && LIBRARY.some((x) => x.kind === 'rule') && LIBRARY.some((x) => x.kind === 'code'));
});

test('patch language - random walks through the grammar always decode into valid patches', async (t) => {
  const rng = new Rng(11);
  for (let n = 0; n < 60; n++) {
    const seq: number[] = [];
    for (;;) {
      const allowed = allowedNext(seq);
      const id = rng.pick(allowed);
      seq.push(id);
      if (id === EOS_ID) break;
    }
    t.true(seq.length <= MAX_COMPONENTS + 2);
    const patch = tokensToPatch(seq);
    if (n < 12) {
      const r = await validatePatch(patch, { smoke: false });
      t.true(r.ok, JSON.stringify(r.errors));
    }
  }
});

test('patch language - teacher proposals round-trip through tokens', async (t) => {
  const games = loadGames().games.slice(0, 10);
  const recs = [];
  for (const g of games) recs.push(await runEpisode(alfworldEnv(g), { model: simModel('llama-1.5b'), seed: 1 }));
  const packet = extractPacket(recs);
  const props = teacherPropose(packet, { k: 6, seed: 3 });
  t.true(props.length > 0);
  for (const p of props) {
    const ids = patchToTokens(p.patch);
    t.truthy(ids, 'representable');
    t.is(ids![0], PATCH_OPEN_ID);
    t.is(ids![ids!.length - 1], EOS_ID);
    t.true(ids!.slice(1, -1).every((i) => i >= COMPONENT_BASE_ID && i < ENGINEER_VOCAB_SIZE));
    const back = tokensToPatch(ids!);
    t.deepEqual([...(back.skills ?? [])].sort(), [...(p.patch.skills ?? [])].sort());
    t.is((back.rules ?? []).length, (p.patch.rules ?? []).length);
  }
  const prompt = engineerPromptTokens(packet);
  t.true(prompt.length <= 200 && prompt.length > 10);
  t.true(prompt.every((i) => i < VOCAB_SIZE));
  t.deepEqual(engineerPromptTokens(packet), prompt);
});

test('patch language - a token outside the components is refused with a typed error', (t) => {
  t.throws(() => tokensToPatch([PATCH_OPEN_ID, 5, EOS_ID]), { message: /not a patch component/ });
  t.is(patchToTokens({ skills: ['a skill nobody wrote'] }), null);
});
