import test from 'ava';
import { loadGames, reset, step, translateAction, TASK_TYPES, type GrammarKind } from '../../../envs/alfworld/index.ts';

const set = loadGames();

test('the vendored set has 140 valid_seen + 200 valid_train games of all six task types', (t) => {
  t.is(set.games.length, 340);
  t.is(set.games.filter((g) => g.split === 'valid_seen').length, 140);
  t.is(set.games.filter((g) => g.split === 'valid_train').length, 200);
  t.deepEqual([...new Set(set.games.map((g) => g.taskType))].sort(), [...TASK_TYPES].sort());
});

for (const gk of ['legacy', 'current'] as GrammarKind[]) {
  test(`every shipped walkthrough succeeds (${gk} grammar), and not before its last action`, (t) => {
    const bad: string[] = [];
    for (const g of set.games) {
      let s = reset(g, { grammar: gk, protocol: 'raw' }).state;
      g.walkthrough.forEach((a, i) => {
        const r = step(g, s, translateAction(a, gk));
        if (r.info.pddl === null) bad.push(`${g.id}: "${a}" did nothing`);
        if (r.done !== (i === g.walkthrough.length - 1)) bad.push(`${g.id}: done=${r.done} at step ${i + 1}`);
        if (r.reward !== (i === g.walkthrough.length - 1 ? 1 : 0)) bad.push(`${g.id}: reward ${r.reward} at ${i + 1}`);
        s = r.state;
      });
      if (!s.won) bad.push(`${g.id}: not won`);
    }
    t.deepEqual(bad, []);
  });
}

test('the other grammar\'s put/move command does nothing', (t) => {
  const g = set.games.find((x) => x.walkthrough.some((a) => a.startsWith('move ')))!;
  for (const gk of ['legacy', 'current'] as GrammarKind[]) {
    let s = reset(g, { grammar: gk, protocol: 'raw' }).state;
    for (const a of g.walkthrough) {
      const wrong = translateAction(a, gk === 'legacy' ? 'current' : 'legacy');
      if (wrong !== translateAction(a, gk)) {
        const r = step(g, s, wrong);
        t.is(r.observation, 'Nothing happens.');
        t.is(r.info.pddl, null);
      }
      s = step(g, s, translateAction(a, gk)).state;
    }
    t.true(s.won);
  }
});
