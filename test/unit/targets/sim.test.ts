import test from 'ava';
import { loadGames } from '../../../envs/alfworld/index.ts';
import { alfworldEnv } from '../../../envs/alfworld/index.ts';
import { baseHarness, canonicalJson, composeHarness, runEpisode } from '../../../harness/index.ts';
import { effectiveRates, simModel } from '../../../policies/targets/sim/sim.ts';
import { SIM_PROFILES, simProfile } from '../../../policies/targets/sim/profiles.ts';
import { MODES } from '../../../policies/targets/sim/modes.ts';

const games = loadGames().games.filter((_, i) => i % 9 === 0).slice(0, 30);


async function success(profile: string, patch: unknown, seed = 1): Promise<number> {
  const h = patch ? composeHarness(baseHarness(), patch) : baseHarness();
  let won = 0;
  for (const g of games) if ((await runEpisode(alfworldEnv(g), { model: simModel(profile), seed, harness: h })).outcome.won) won++;
  return won / games.length;
}

test('sim - 20 profiles over 5 families and 4 sizes, every output names them simulated', (t) => {
  t.is(SIM_PROFILES.length, 20);
  t.is(new Set(SIM_PROFILES.map((p) => p.family)).size, 5);
  t.is(simModel('qwen-8b').name, 'sim/qwen-8b');
  t.throws(() => simModel('gpt-9'), { message: /no simulated profile "gpt-9"; choose one of qwen-1.5b/ });
});

test('sim - the same seed gives the same episode, another seed another', async (t) => {
  const g = games[3]!;
  const run = (seed: number) => runEpisode(alfworldEnv(g), { model: simModel('llama-3b'), seed });
  const a = await run(5);
  const b = await run(5);
  t.is(canonicalJson(a), canonicalJson(b));
  const others = await Promise.all([6, 7, 8, 9].map(run));
  t.true(others.some((o) => canonicalJson(o.steps) !== canonicalJson(a.steps)), 'seeds change the draws');
});

test('sim - a hint that addresses a mode lowers that mode by the profile\'s compliance', (t) => {
  const p = simProfile('qwen-3b')!;
  const base = effectiveRates(p, [{ role: 'system', content: 'Interact with a household.' }, { role: 'user', content: 'You are in a room.' }], 'alfworld');
  const hinted = effectiveRates(p, [{ role: 'system', content: 'Interact with a household.\n\nSkills:\n1. Do not repeat the same action.' }, { role: 'user', content: 'You are in a room.' }], 'alfworld');
  t.true(hinted.addressed.has('loop'));
  t.is(Number(hinted.rates.loop.toFixed(6)), Number((base.rates.loop * (1 - p.compliance)).toFixed(6)));
  for (const m of MODES) if (m !== 'loop') t.is(hinted.rates[m], base.rates[m], m);
  // an env observation is not a hint
  const obs = effectiveRates(p, [{ role: 'system', content: 'x' }, { role: 'user', content: 'a' }, { role: 'assistant', content: 'go to desk 1' }, { role: 'user', content: 'Nothing happens.' }], 'alfworld');
  t.is(obs.addressed.size, 0);
});

test('sim - long context and irrelevant hint text raise format violations, more for small profiles', (t) => {
  const noise = 'The history of furniture design spans many centuries and cultures. '.repeat(30);
  const msgs = [{ role: 'system' as const, content: `Interact.\n\nSkills:\n1. ${noise}` }, { role: 'user' as const, content: 'You are in a room.' }];
  const small = simProfile('phi-1.5b')!;
  const big = simProfile('phi-32b')!;
  const ds = effectiveRates(small, msgs, 'alfworld').rates.format_violation - effectiveRates(small, msgs.slice(1), 'alfworld').rates.format_violation;
  const db = effectiveRates(big, msgs, 'alfworld').rates.format_violation - effectiveRates(big, msgs.slice(1), 'alfworld').rates.format_violation;
  t.true(ds > 0.1, `small profile hurt (${ds})`);
  t.true(db < ds / 5, `big profile barely hurt (${db})`);
});

test('sim - a relevant skill helps a loop-prone profile; irrelevant noise hurts a small one', async (t) => {
  const vanilla = await success('llama-3b', null);
  const helped = await success('llama-3b', { skills: ['Do not repeat the same action. If nothing happens, try a different action.'] });
  t.true(helped > vanilla + 0.1, `loop hint: ${vanilla} → ${helped}`);
  const noise = { skills: ['The history of furniture design spans many centuries and cultures. '.repeat(28), 'Chairs and tables were often made of oak, walnut or pine by skilled makers. '.repeat(25)] };
  const hurt = await success('llama-3b', noise);
  const v1 = vanilla;
  t.true(hurt < v1, `noise: ${v1} → ${hurt}`);
});

test('sim - vanilla success spreads across profiles (small fail more than large)', async (t) => {
  const small = await success('mistral-1.5b', null);
  const large = await success('mistral-32b', null);
  t.true(small < 0.35, `small ${small}`);
  t.true(large > 0.7, `large ${large}`);
});
