/**
 * The DBBench sketch parser's pure parts (policies/targets/lm/dbbench/sketch.ts) and its agent
 * loop (sketch-model.ts): every synthetic SQL shape reads back as a sketch, values are found in
 * the question, and outputs that say the labels exactly give SQL that wins the task through the
 * real env and SQLite (so what a trained parser loses is its own reading, not the decoder's).
 */
import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { dbbenchEnv, loadTasks } from '../../../envs/dbbench/index.ts';
import { runEpisode } from '../../../harness/index.ts';
import { probeSynthetic } from '../../../policies/targets/lm/dbbench/probe.ts';
import { decodeSketch, encodeSketch, findSpan, parseRequest, quoteMarks, quotedFlags, sketchExample, sketchOf, sketchTokens, SKETCH_KINDS, SKETCH_MAX_COLS, type SketchInput, type SketchOutputs } from '../../../policies/targets/lm/dbbench/sketch.ts';
import { harnessText, sketchPolicy, type SketchRunner } from '../../../policies/targets/lm/dbbench/sketch-model.ts';
import { synthTasks } from '../../../policies/targets/lm/dbbench/synth.ts';
import { minedReads, parseRead } from '../../../policies/targets/lm/dbbench/mined.ts';
import { teacherModel } from '../../../policies/targets/lm/dbbench/teacher.ts';
import type { DbbenchTask } from '../../../envs/dbbench/index.ts';

/** Outputs that say a task's labels exactly (a perfect parser), for the input the loop encodes. */
function oracleRunner(task: DbbenchTask): SketchRunner {
  return {
    async run(inp: SketchInput) {
      // the task's own columns, position for position with those the request names
      const ex = sketchExample({ description: inp.question, tableName: inp.table, columns: task.columns, sqlQuery: task.sqlQuery, label: task.label }, inp.extra);
      if (!ex) throw new Error(`no sketch example for ${task.id}`);
      const enc = encodeSketch(inp);
      const C = SKETCH_MAX_COLS;
      const L = enc.length;
      const one = (n: number, at: number): number[] => Array.from({ length: n }, (_, i) => (i === at ? 10 : -10));
      const out: SketchOutputs = {
        kind: one(SKETCH_KINDS.length, ex.kind),
        sel: one(C, ex.sel),
        num: one(C, ex.num),
        where: ex.where.map((x) => (x ? 10 : -10)),
        set: ex.set.map((x) => (x ? 10 : -10)),
        start: Array.from({ length: C * L }, (_, i) => (ex.spanStart[Math.floor(i / L)] === i % L ? 10 : -10)),
        end: Array.from({ length: C * L }, (_, i) => (ex.spanEnd[Math.floor(i / L)] === i % L ? 10 : -10)),
      };
      return { enc, out };
    },
    release: async () => undefined,
  };
}

test('sketch - every synthetic shape reads back; values are found in the question', async (t) => {
  const tasks = await synthTasks(new Rng('sketch-test:1'), 160, { rename: 0.7, phrasing: 'wide' });
  const kinds = new Set<string>();
  let examples = 0;
  for (const task of tasks) {
    const sql = task.sqlQuery ?? task.label[0]!;
    const sk = sketchOf(sql, task.columns);
    t.truthy(sk, `${task.type}: ${sql}`);
    kinds.add(sk!.kind);
    if (sketchExample(task)) examples++;
  }
  t.true(kinds.size >= 10, `kinds seen: ${[...kinds].join(', ')}`);
  // a value the question does not say (a synthetic task whose value was rephrased) would be dropped
  t.true(examples >= 150, `${examples} of 160 tasks gave examples`);
  t.is(sketchOf('SELECT name FROM t GROUP BY name;', ['name']), null);
  t.is(sketchOf('SELECT `x` FROM `t` WHERE `nope` = \'1\';', ['x']), null, 'an unknown column is no sketch');
});

test('sketch - findSpan prefers a quoted occurrence and skips taken runs', (t) => {
  const q = "Set Team to 'Boca' where the team is Boca Juniors and Boca";
  const toks = sketchTokens(q);
  const quoted = findSpan(q, toks, 'Boca', []);
  t.deepEqual(quoted && q.slice(toks[quoted[0]]!.start, toks[quoted[1]]!.end), 'Boca');
  t.is(q[toks[quoted![0]]!.start - 1], "'");
  const next = findSpan(q, toks, 'boca', [quoted!]);
  t.truthy(next);
  t.not(next![0], quoted![0]);
  t.deepEqual(findSpan(q, toks, 'Boca Juniors', []), [toks.findIndex((x) => x.low === 'boca' && x.start > 30), toks.findIndex((x) => x.low === 'juniors')]);
  t.is(findSpan(q, toks, 'River', []), null);
});

test('sketch - the request message parses; harness text is read beside it', (t) => {
  const msg = "How many wins?\nThe name of this table is Team Stats, and the headers of this table are Team,Wins,Year(s).";
  t.deepEqual(parseRequest(msg), { question: 'How many wins?', table: 'Team Stats', columns: ['Team', 'Wins', 'Year(s)'] });
  t.is(parseRequest('[(1,)]'), null);
  const messages = [
    { role: 'system' as const, content: 'You are an agent.\n\nSkills:\n1. Quote string values.' },
    { role: 'user' as const, content: 'protocol' },
    { role: 'assistant' as const, content: 'Ok.' },
    { role: 'user' as const, content: msg },
    { role: 'assistant' as const, content: 'Action: Operation\n```sql\nSELECT 1;\n```' },
    { role: 'user' as const, content: '1054 (42S22): Unknown column' },
    { role: 'user' as const, content: 'Check the column names.' },
    { role: 'user' as const, content: 'Hint: use the Wins column' },
  ];
  t.is(harnessText(messages, 3), 'use the Wins column Check the column names. 1. Quote string values.');
  const enc = encodeSketch({ question: 'How many wins?', table: 'Team Stats', columns: ['Team', 'Wins'], extra: 'use the Wins column' });
  const seg = (i: number): number => enc.feats[i * 5 + 4]!;
  t.true(enc.pos.some((_p, i) => seg(i) === 2), 'harness text has its own segment');
  t.is(enc.qmask.filter((x) => x > 0).length, sketchTokens('How many wins?').length, 'spans only over the question');
  // the schema-linking feature: "wins" is a header word
  const winsAt = enc.qTokens.findIndex((x) => x.low === 'wins');
  t.is(enc.feats[winsAt * 5 + 3], 1);
});

test('sketch - outputs that say the labels win every synthetic task through the env; a retry after an error samples another reading', async (t) => {
  const r = await probeSynthetic((task) => sketchPolicy('oracle', oracleRunner(task), { temperature: 0.5 }), { tasks: 40, phrasing: 'wide' });
  t.is(r.tasks, 40);
  t.true(r.won >= 39, `${r.won} of 40 won`);
  t.true(r.writes.tasks > 5 && r.reads.tasks > 5);
  // after an SQL error the loop parses again (sampled), then gives up after three operations:
  // the request names headers the table does not have, so every statement fails
  const [task] = await synthTasks(new Rng('sketch-test:2'), 1);
  const policy = sketchPolicy('x', oracleRunner(task!), { temperature: 0.5 });
  const bad = { ...task!, addDescription: task!.addDescription.replace(/headers of this table are (.*)\.$/, (_m, h: string) => `headers of this table are ${h.split(',').map((c) => `${c}_x`).join(',')}.`) };
  const rec = await runEpisode(dbbenchEnv(bad), { model: policy, seed: 1 });
  const ops = rec.steps.filter((s) => /Action: Operation/.test(s.action)).length;
  t.is(ops, 3, 'three operations, then an answer');
  t.regex(rec.steps[3]!.action, /Final Answer: \[\]/);
  t.false(rec.outcome.won);
});

test('sketch - decoding is greedy without an rng and deterministic with one', (t) => {
  const inp: SketchInput = { question: "What is the Team when the Year is 2001?", table: 'T', columns: ['Team', 'Year'] };
  const enc = encodeSketch(inp);
  const L = enc.length;
  const C = SKETCH_MAX_COLS;
  const rnd = new Rng('sketch-out');
  const out: SketchOutputs = {
    kind: SKETCH_KINDS.map((_k, i) => (i === 0 ? 3 : rnd.next())),
    sel: Array.from({ length: C }, (_v, i) => (i === 0 ? 3 : -1)),
    num: Array.from({ length: C }, () => 0),
    where: Array.from({ length: C }, (_v, i) => (i === 1 ? 3 : -3)),
    set: Array.from({ length: C }, () => -3),
    start: Array.from({ length: C * L }, (_v, i) => (enc.qTokens[i % L]?.low === '2001' ? 3 : 0)),
    end: Array.from({ length: C * L }, (_v, i) => (enc.qTokens[i % L]?.low === '2001' ? 3 : 0)),
  };
  t.is(decodeSketch(inp, enc, out).sql, "SELECT `Team` FROM `T` WHERE `Year` = '2001';");
  const a = decodeSketch(inp, enc, out, { rng: new Rng(5), temperature: 1 }).sql;
  const b = decodeSketch(inp, enc, out, { rng: new Rng(5), temperature: 1 }).sql;
  t.is(a, b);
  // a value with a quote is escaped for SQL
  const q2: SketchInput = { question: "What is the Team when the Name is Don't Stop?", table: 'T', columns: ['Team', 'Name'] };
  const e2 = encodeSketch(q2);
  const L2 = e2.length;
  const at = (w: string): number => e2.qTokens.findIndex((x) => x.low === w);
  const o2 = { ...out, start: Array.from({ length: C * L2 }, (_v, i) => (i % L2 === at('don') ? 3 : 0)), end: Array.from({ length: C * L2 }, (_v, i) => (i % L2 === at('stop') ? 3 : 0)) };
  t.is(decodeSketch(q2, e2, o2).sql, "SELECT `Team` FROM `T` WHERE `Name` = 'Don''t Stop';");
});

test('sketch - a quoted value is decoded whole, as every quoted value of the synthetic data is', async (t) => {
  // the training data: a label span that sits inside quotes is always the whole quoted text, so the
  // decoding rule only keeps the parser to readings its data has
  const tasks = await synthTasks(new Rng('sketch-quotes'), 300, { rename: 0.7, phrasing: 'mined' });
  let inside = 0;
  for (const task of tasks) {
    const ex = sketchExample(task);
    if (!ex) continue;
    const marks = quoteMarks(task.description, ex.enc.qTokens);
    const flags = quotedFlags(task.description, ex.enc.qTokens);
    ex.spanStart.forEach((s, c) => {
      if (s < 0 || !flags[s]) return;
      inside++;
      t.true(marks[s - 1] && marks[ex.spanEnd[c]! + 1], `${task.description}: a part of a quoted value`);
    });
  }
  t.true(inside > 100, `${inside} quoted label spans`);
  // outputs that prefer 'Scenic' alone for LGA still give the whole value
  const inp: SketchInput = { question: "Insert data into the table named P, with values 'Harris' for Parish, 'Scenic Rim' for LGA, and 'Boonah' for Towns.", table: 'P', columns: ['Parish', 'LGA', 'Towns'] };
  const enc = encodeSketch(inp);
  const L = enc.length;
  const C = SKETCH_MAX_COLS;
  const at = (w: string): number => enc.qTokens.findIndex((x) => x.low === w);
  const want: Record<number, [string, string]> = { 0: ['harris', 'harris'], 1: ['scenic', 'scenic'], 2: ['boonah', 'boonah'] };
  const out: SketchOutputs = {
    kind: SKETCH_KINDS.map((k) => (k === 'insert' ? 5 : 0)),
    sel: Array.from({ length: C }, () => 0),
    num: Array.from({ length: C }, () => 0),
    where: Array.from({ length: C }, () => -3),
    set: Array.from({ length: C }, () => -3),
    start: Array.from({ length: C * L }, (_v, i) => (want[Math.floor(i / L)] && i % L === at(want[Math.floor(i / L)]![0]) ? 5 : 0)),
    end: Array.from({ length: C * L }, (_v, i) => (want[Math.floor(i / L)] && i % L === at(want[Math.floor(i / L)]![1]) ? 5 : 0)),
  };
  t.is(decodeSketch(inp, enc, out).sql, "INSERT INTO `P` (`Parish`, `LGA`, `Towns`) VALUES ('Harris', 'Scenic Rim', 'Boonah');");
});

test('mined reads - training reads of a sketch shape become templates; the mined phrasing keeps wide tasks as they were and its reads parse back', async (t) => {
  t.deepEqual(parseRead("SELECT SUM(`Pick #`) FROM `hockey_players` WHERE `Position`='D' AND `Team from`='Chilliwack Bruins';"), { fn: 'SUM', sel: 'Pick #', table: 'hockey_players', conds: [['Position', '=', 'D'], ['Team from', '=', 'Chilliwack Bruins']], order: null });
  t.deepEqual(parseRead('SELECT Platform FROM `SWAT Games` WHERE Year > 2006 AND Developer = \'3G Studios\';')?.conds, [['Year', '>', '2006'], ['Developer', '=', '3G Studios']]);
  t.deepEqual(parseRead('SELECT Band FROM t WHERE System = \'GSM-450\' ORDER BY Band DESC LIMIT 1;')?.order, ['Band', 'DESC']);
  t.is(parseRead('SELECT COUNT(*) FROM t WHERE Date LIKE \'October%\';'), null, 'LIKE is no sketch shape');
  t.is(parseRead("SELECT AttendanceFROM Hockey GamesWHERE Round = 52;"), null);
  const reads = minedReads();
  t.true(reads.length >= 8, `${reads.length} read templates`);
  const dev = new Set(loadTasks({ file: 'v0.2/dev' }).map((x) => x.description));
  for (const r of reads) {
    t.false(dev.has(r.pieces.filter((p) => typeof p === 'string').join('')), 'no template comes from a dev question');
    // only a count of the whole table may say nothing of the table (`what is the total number of films he has made?`)
    t.true(r.pieces.some((p) => typeof p !== 'string') || (r.kind === 'count' && r.eq === 0), `${r.source} has slots`);
  }
  // the wide phrasing draws what it drew before the mined one existed
  const wide = await synthTasks(new Rng('mined-test'), 40, { rename: 0.7, phrasing: 'wide' });
  const again = await synthTasks(new Rng('mined-test'), 40, { rename: 0.7, phrasing: 'wide' });
  t.deepEqual(wide.map((x) => x.description), again.map((x) => x.description));
  const mined = await synthTasks(new Rng('mined-test'), 300, { rename: 0.7, phrasing: 'mined' });
  const sketches = mined.map((x) => sketchOf(x.sqlQuery ?? x.label[0]!, x.columns));
  t.true(sketches.every((s) => s !== null));
  t.true(sketches.some((s) => s!.where.length > 1), 'some reads have several conditions');
  t.true(mined.some((x) => reads.some((r) => r.pieces.filter((p): p is string => typeof p === 'string' && p.length > 12).some((p) => x.description.includes(p)))), 'some reads are phrased as a mined template');
  const teacher = await probeSynthetic((task) => teacherModel(task, { noise: 0 }), { tasks: 40, phrasing: 'mined' });
  t.is(teacher.won, 40);
});
