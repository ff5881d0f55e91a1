import test from 'ava';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { loadGames, loadGameFile, reset, step, AlfworldBadGameError, VENDORED_FILE } from '../../../envs/alfworld/index.ts';
import { fromCompact, type CompactData } from '../../../envs/alfworld/data.ts';
import { problemText } from '../../../envs/alfworld/pddl.ts';

const compact = JSON.parse(gunzipSync(readFileSync(VENDORED_FILE)).toString('utf8')) as CompactData;
const sources = fromCompact(compact, VENDORED_FILE);

function upstreamJson(i: number): Record<string, unknown> {
  const s = sources[i]!;
  return { pddl_domain: s.domain, grammar: s.grammar, pddl_problem: problemText(s.problem), solvable: true, walkthrough: s.walkthrough };
}

function writeGame(dir: string, rel: string, data: unknown): string {
  const d = join(dir, 'json_2.1.1', rel);
  mkdirSync(d, { recursive: true });
  const f = join(d, 'game.tw-pddl');
  writeFileSync(f, typeof data === 'string' ? data : JSON.stringify(data));
  return f;
}

test('--data: an upstream layout loads and plays exactly like the vendored copy', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'alfw-'));
  for (const i of [0, 200]) writeGame(dir, sources[i]!.id, upstreamJson(i));
  const up = loadGames({ dataDir: dir });
  t.is(up.games.length, 2);
  const vend = loadGames();
  for (const g of up.games) {
    const v = vend.get(g.id);
    t.deepEqual(g.names, v.names);
    let a = reset(g, { protocol: 'react' });
    let b = reset(v, { protocol: 'react' });
    t.is(a.observation, b.observation);
    for (const act of g.walkthrough) {
      const ra = step(g, a.state, act.replace(/^move (.+) to (.+)$/, 'put $1 in/on $2'));
      const rb = step(v, b.state, act.replace(/^move (.+) to (.+)$/, 'put $1 in/on $2'));
      t.is(ra.observation, rb.observation);
      a = { ...a, state: ra.state };
      b = { ...b, state: rb.state };
    }
    t.true(a.state.won);
  }
  t.is(loadGames({ dataDir: dir, split: 'valid_train' }).games.length, 1);
});

const cases: [string, (d: Record<string, unknown>) => unknown, string][] = [
  ['not JSON', () => '{"pddl_domain": ', '(root)'],
  ['missing pddl_problem', (d) => ({ ...d, pddl_problem: undefined }), 'pddl_problem'],
  ['unbalanced problem', (d) => ({ ...d, pddl_problem: (d.pddl_problem as string).slice(0, -3) }), 'pddl_problem'],
  ['no goal', (d) => ({ ...d, pddl_problem: (d.pddl_problem as string).replace(/\(:goal[\s\S]*$/, ')') }), 'pddl_problem:goal'],
  ['undeclared object', (d) => ({ ...d, pddl_problem: (d.pddl_problem as string).replace('(:init', '(:init\n  (opened ghost_bar_1)') }), 'pddl_problem:objects'],
  ['walkthrough not strings', (d) => ({ ...d, walkthrough: [1, 2] }), 'walkthrough'],
  ['grammar without task', (d) => ({ ...d, grammar: (d.grammar as string).replace(/"task"/, '"tusk"') }), 'grammar'],
];
for (const [name, mutate, field] of cases) {
  test(`malformed game file (${name}) → AlfworldBadGameError naming the file and ${field}`, (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'alfw-bad-'));
    const f = writeGame(dir, 'valid_seen/x/trial_1', mutate(upstreamJson(3)));
    const err = t.throws(() => loadGameFile(f), { instanceOf: AlfworldBadGameError });
    t.is(err!.code, 'ALFWORLD_BAD_GAME');
    t.is(err!.file, f);
    t.is(err!.field, field);
    t.true(err!.message.includes(f) && err!.message.includes(field));
  });
}
