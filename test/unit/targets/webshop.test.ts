import test from 'ava';
import { listTasks } from '../../../envs/registry.ts';
import { rollout, summarizeRecords } from '../../../drivers/index.ts';
import { init } from '../../../cluster/init.ts';
import { canonicalJson, expertModel, runEpisode } from '../../../harness/index.ts';
import { parseWebshopAction, webshopEnv } from '../../../envs/webshop/index.ts';

test('webshop - the harness adapter parses search[...] and click[...] and flags anything else', (t) => {
  t.deepEqual(parseWebshopAction('Thought: look.\nAction: Search[red shoes]'), { action: 'search[red shoes]', ok: true });
  t.deepEqual(parseWebshopAction('click[B078GWRC1J]'), { action: 'click[B078GWRC1J]', ok: true });
  t.false(parseWebshopAction('I will buy the shoes').ok);
});

test('webshop - the expert through the harness buys the goal product on every dev goal', async (t) => {
  const ids = listTasks('webshop', 'dev');
  t.true(ids.length > 20);
  for (const id of ids) {
    const r = await runEpisode(webshopEnv(id), { model: expertModel(), seed: 0 });
    t.true(r.outcome.won, `${id}: ${r.outcome.status}`);
  }
});

test('webshop - SIMULATED targets roll out deterministically and small ones fail more', async (t) => {
  const rt = await init({ inProcess: true });
  try {
    const episodes = listTasks('webshop', 'all').slice(0, 60).map((taskId) => ({ taskId, seed: 2 }));
    const a = await rollout(rt.cluster, { env: 'webshop', target: 'sim/llama-1.5b', episodes }, { cache: null });
    const b = await rollout(rt.cluster, { env: 'webshop', target: 'sim/llama-1.5b', episodes }, { cache: null });
    t.is(canonicalJson(a.records), canonicalJson(b.records));
    const big = await rollout(rt.cluster, { env: 'webshop', target: 'sim/llama-32b', episodes }, { cache: null });
    t.true(summarizeRecords(a.records).success < summarizeRecords(big.records).success);
  } finally {
    await rt.shutdown();
  }
});
