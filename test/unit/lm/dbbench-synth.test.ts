/**
 * DBBench learned targets' data: the synthetic task generator (training tables only), the
 * SQL-knowing teacher played through the real env, the reply renderer, and the context segments.
 */
import test from 'ava';
import { createHash } from 'node:crypto';
import { Rng } from '../../../cluster/rng.ts';
import { compareV02Read, dbbenchEnv, loadTasks, TASK_TYPES, V02_PROMPT } from '../../../envs/dbbench/index.ts';
import { runEpisode } from '../../../harness/index.ts';
import { collectDbbench, perturbSql, teacherAction, teacherModel } from '../../../policies/targets/lm/dbbench/teacher.ts';
import { answerText, DEFAULT_RENAME, devTables, mentionOrder, resultCells, synthTasks, tableNameKey, trainingTables } from '../../../policies/targets/lm/dbbench/synth.ts';
import { renderDbbench } from '../../../policies/targets/lm/dbbench/render.ts';
import { fillTemplate, minedTemplates, parseInsert, parseUpdate } from '../../../policies/targets/lm/dbbench/mined.ts';
import { segmentMessages, buildContext } from '../../../policies/targets/lm/context.ts';
import { harvestWords } from '../../../policies/targets/lm/vocab.ts';
import { LmTokenizer } from '../../../policies/targets/lm/tokenizer.ts';
import { isLmTargetError } from '../../../policies/targets/lm/errors.ts';

const tasks = synthTasks(new Rng('test-dbsynth:1'), 240);
/** with the entity-name augmentation, as the BC collection draws them */
const renamed = synthTasks(new Rng('test-dbsynth:rename'), 200, { rename: DEFAULT_RENAME });
const both = async () => [...(await tasks), ...(await renamed)];
const tokP = harvestWords(['dbbench']).then((w) => new LmTokenizer(w));

test('dbbench synth - deterministic for a seed, another seed draws other tasks', async (t) => {
  const a = await tasks;
  const b = await synthTasks(new Rng('test-dbsynth:1'), 240);
  t.deepEqual(a, b);
  const c = await synthTasks(new Rng('test-dbsynth:2'), 40);
  t.notDeepEqual(a.slice(0, 40).map((x) => x.description), c.map((x) => x.description));
  t.is(new Set(a.map((x) => x.id)).size, a.length);
});

test('dbbench synth - no task uses a dev table: no dev table name, no dev row, no dev table content', async (t) => {
  const dev = devTables();
  const devTasks = loadTasks({ file: 'v0.2/dev' });
  t.true(dev.names.size >= 50);
  const standardNames = new Set(loadTasks({ file: 'v0.2/standard' }).map((x) => tableNameKey(x.tableName)));
  // the training split shares table names with dev: those tables are left out
  t.true([...dev.names].some((n) => standardNames.has(n)));
  for (const table of trainingTables()) {
    t.false(dev.names.has(tableNameKey(table.name)), table.name);
    t.false(table.rows.some((r) => dev.rows.has(JSON.stringify(r))), table.name);
  }
  for (const x of await both()) {
    t.false(dev.names.has(tableNameKey(x.tableName)), x.id);
    t.false(devTasks.some((d) => JSON.stringify([d.columns, d.rows]) === JSON.stringify([x.columns, x.rows])), x.id);
    t.false(x.rows.some((r) => dev.rows.has(JSON.stringify(r))), x.id);
  }
});

test('dbbench synth - every type of the real set is drawn, plus DELETE', async (t) => {
  const types = new Set((await tasks).map((x) => x.type));
  for (const ty of [...TASK_TYPES, 'DELETE'] as const) t.true(types.has(ty), ty);
});

test('dbbench synth - answers are right: lookups and counts recomputed from the rows', async (t) => {
  let checked = 0;
  for (const x of await both()) {
    const m = /^SELECT (COUNT\(\*\)|`([^`]+)`) FROM `[^`]+` WHERE `([^`]+)` = '([^']*)';$/.exec(x.sqlQuery ?? '');
    if (!m) continue;
    const y = x.columns.indexOf(m[3]!);
    const hit = x.rows.filter((r) => (r[y] ?? '').toLowerCase() === m[4]!.toLowerCase());
    if (m[1] === 'COUNT(*)') t.deepEqual(x.label, [String(hit.length)], x.id);
    else t.deepEqual([...x.label].sort(), hit.map((r) => r[x.columns.indexOf(m[2]!)] ?? 'None').sort(), x.id);
    checked++;
  }
  t.true(checked >= 80, `${checked} checked`);
  for (const x of await both()) {
    if (x.sqlQuery) t.true(compareV02Read(JSON.stringify(x.label), x.label), x.id);
    else t.regex(x.answerMd5 ?? '', /^\[\('[0-9a-f]{32}',\)\]$/, x.id);
  }
});

test('dbbench synth - renaming: many table names, new headers and values, legal names of vocabulary words; rename 0 draws the old tasks', async (t) => {
  const xs = await renamed;
  const plain = (await tasks).slice(0, xs.length);
  const training = trainingTables();
  const names = new Set(training.map((x) => x.name));
  const contents = new Set(training.map((x) => JSON.stringify(x.rows)));
  const headers = new Set(training.map((x) => JSON.stringify(x.columns)));
  const distinct = new Set(xs.map((x) => x.tableName)).size;
  const newNames = xs.filter((x) => !names.has(x.tableName)).length;
  const newHeaders = xs.filter((x) => !headers.has(JSON.stringify(x.columns))).length;
  const newValues = xs.filter((x) => !contents.has(JSON.stringify(x.rows))).length;
  const tok = await tokP;
  const vocab = new Set(tok.vocab);
  const words = xs.filter((x) => !names.has(x.tableName)).flatMap((x) => `${x.tableName} ${x.columns.join(' ')}`.toLowerCase().match(/[a-z]+/g) ?? []);
  const inVocab = words.filter((w) => vocab.has(w)).length / words.length;
  t.log(`${xs.length} tasks: ${distinct} distinct table names (${new Set(plain.map((x) => x.tableName)).size} without renaming, ${training.length} training tables); new name ${newNames}, new headers ${newHeaders}, new values ${newValues}; ${(inVocab * 100).toFixed(0)} % of the new names' words in the vocabulary`);
  t.true(distinct > 172 && distinct >= 1.4 * new Set(plain.map((x) => x.tableName)).size);
  t.true(newNames >= 0.6 * xs.length && newHeaders >= 0.6 * xs.length && newValues >= 0.4 * xs.length);
  t.true(inVocab >= 0.9);
  for (const x of xs) {
    t.true(x.tableName.length <= 64 && x.tableName === x.tableName.trim() && !/[`\n\\]/.test(x.tableName), x.tableName);
    const lower = x.columns.map((c) => c.toLowerCase());
    t.is(new Set([...lower, x.tableName.toLowerCase()]).size, lower.length + 1, x.id);
    for (const c of x.columns) t.true(c !== '' && c.length <= 64 && c === c.trim() && !/[`\n\\]/.test(c), c);
    t.true(x.addDescription.includes(`The name of this table is ${x.tableName}, and the headers of this table are ${x.columns.join(',')}.`), x.id);
  }
  t.deepEqual(await synthTasks(new Rng('test-dbsynth:1'), 40, { rename: 0 }), (await tasks).slice(0, 40));
});

test('dbbench synth - bad options are typed errors', async (t) => {
  for (const bad of [() => synthTasks(new Rng(1), -1), () => synthTasks(new Rng(1), 3, { weights: { other: -1 } }), () => synthTasks(new Rng(1), 3, { tables: [] }), () => synthTasks(new Rng(1), 3, { rename: 1.5 }), () => synthTasks(new Rng(1), 3, { phrasing: 'long' as never }), () => synthTasks(new Rng(1), 3, { insertColumns: 'header' as never })]) {
    const e = await t.throwsAsync(bad());
    t.true(isLmTargetError(e) && e.code === 'LM_BAD_OPTION', String(e));
  }
});

test('dbbench synth - mined templates: only training-split writes, and each filled with its own task\'s names and values gives that request back', (t) => {
  const ms = minedTemplates();
  const ins = ms.filter((m) => m.type === 'INSERT');
  const upd = ms.filter((m) => m.type === 'UPDATE');
  t.log(`${ins.length} INSERT and ${upd.length} UPDATE templates (${upd.filter((m) => !m.namesKey).length} name the row by its value alone)`);
  t.true(ins.length >= 20 && upd.length >= 20);
  const train = new Map(loadTasks({ file: 'v0.2/standard' }).map((x) => [x.id, x]));
  const dev = devTables();
  const norm = (x: string): string => x.toLowerCase().replace(/_/g, ' ');
  for (const m of ms) {
    const src = train.get(m.source);
    t.truthy(src, `${m.source} is a training task`);
    t.false(dev.names.has(tableNameKey(src!.tableName)));
    let filled: string;
    if (m.type === 'INSERT') {
      const p = parseInsert(src!.label[0]!)!;
      const order = p.columns ? p.columns.map((c) => src!.columns.findIndex((x) => x.toLowerCase() === c.toLowerCase())) : src!.columns.map((_c, i) => i);
      filled = fillTemplate(m, { table: src!.tableName, column: (i) => src!.columns[i]!, value: (i) => p.values[order.indexOf(i)]! });
    } else {
      const p = parseUpdate(src!.label[0]!)!;
      filled = fillTemplate(m, { table: src!.tableName, column: (j) => p.sets[j]![0], value: (j) => p.sets[j]![1], keyColumn: p.key[0], keyValue: p.key[1] });
    }
    t.is(norm(filled), norm(src!.description), m.source);
  }
  // the scanner: quoted, backticked and bare names; escaped quotes; a column list; several SETs
  t.deepEqual(parseInsert("INSERT INTO `A b` (x, `y z`) VALUES ('it''s', 3);"), { table: 'A b', columns: ['x', 'y z'], values: ["it's", '3'] });
  t.deepEqual(parseUpdate("UPDATE t SET a='1', `b c` = 'x\\'y' WHERE k = 10"), { table: 't', sets: [['a', '1'], ['b c', "x'y"]], key: ['k', '10'] });
  t.is(parseUpdate('UPDATE t SET a = 1 WHERE k = 2 AND j = 3'), null);
  t.is(parseInsert('INSERT INTO t SELECT * FROM u'), null);
});

test('dbbench synth - wide phrasing: writes phrased as mined training requests, same answers, the teacher wins them; base is the default and unchanged', async (t) => {
  const base = await synthTasks(new Rng('wide:1'), 40, { rename: 0.7 });
  t.deepEqual(await synthTasks(new Rng('wide:1'), 40, { rename: 0.7, phrasing: 'base' }), base);
  // and the same tasks the generator drew before the option existed (their ids hash name, question
  // and SQL; digest taken at 55a7759): the built DBBench models' data is unchanged
  t.is(createHash('sha256').update(JSON.stringify(base.map((x) => x.id))).digest('hex').slice(0, 16), '380eeb9d700c1bdf');
  const wide = await synthTasks(new Rng('wide:1'), 160, { rename: 0.7, phrasing: 'wide' });
  // a filled template is the mined request with other names and values: its fixed text is there
  const fixed = (m: ReturnType<typeof minedTemplates>[number]): string[] => m.pieces.filter((x): x is string => typeof x === 'string' && x.trim().length >= 12);
  const writes = wide.filter((x) => x.type === 'INSERT' || x.type === 'UPDATE');
  const mined = writes.filter((x) => minedTemplates().some((m) => m.type === x.type && fixed(m).length > 0 && fixed(m).every((f) => x.description.includes(f))));
  t.log(`${mined.length} of ${writes.length} writes phrased as mined requests, e.g. ${mined.slice(0, 3).map((x) => `${x.description} => ${x.label[0]}`).join(' | ')}`);
  t.true(mined.length >= 0.4 * writes.length);
  t.true(wide.some((x) => x.type === 'UPDATE' && /SET `[^`]+` = '[^']*', `/.test(x.label[0]!)), 'an UPDATE of several columns');
  let won = 0;
  for (const x of wide) if ((await runEpisode(dbbenchEnv(x), { model: teacherModel(x), seed: 0 })).outcome.won) won++;
  t.log(`teacher on the wide phrasing ${won}/${wide.length}`);
  t.true(won >= 0.98 * wide.length);
});

test('dbbench teacher - wins the synthetic tasks through the real env, also through the tokenizer and the renderer', async (t) => {
  const xs = (await tasks).slice(0, 120);
  const tok = await tokP;
  let won = 0;
  let wonTok = 0;
  for (const x of xs) {
    if ((await runEpisode(dbbenchEnv(x), { model: teacherModel(x), seed: 0 })).outcome.won) won++;
    const viaTok = teacherModel(x, { render: (a, m) => renderDbbench(tok.encode(a), tok, m) });
    if ((await runEpisode(dbbenchEnv(x), { model: viaTok, seed: 0 })).outcome.won) wonTok++;
  }
  t.log(`teacher ${won}/${xs.length}, through tokens ${wonTok}/${xs.length}`);
  t.true(won >= 0.98 * xs.length);
  t.true(wonTok >= 0.95 * xs.length);
});

test('dbbench teacher - wins the renamed synthetic tasks through the real env, also through the tokenizer and the renderer', async (t) => {
  const names = new Set(trainingTables().map((x) => x.name));
  const xs = await renamed;
  const tok = await tokP;
  let won = 0;
  let wonTok = 0;
  let wonRenamed = 0;
  for (const x of xs) {
    const w = (await runEpisode(dbbenchEnv(x), { model: teacherModel(x), seed: 0 })).outcome.won;
    if (w) won++;
    if (w && !names.has(x.tableName)) wonRenamed++;
    const viaTok = teacherModel(x, { render: (a, m) => renderDbbench(tok.encode(a), tok, m) });
    if ((await runEpisode(dbbenchEnv(x), { model: viaTok, seed: 0 })).outcome.won) wonTok++;
  }
  const nRenamed = xs.filter((x) => !names.has(x.tableName)).length;
  t.log(`teacher ${won}/${xs.length} (renamed tables ${wonRenamed}/${nRenamed}), through tokens ${wonTok}/${xs.length}`);
  t.true(won >= 0.98 * xs.length);
  t.true(wonTok >= 0.95 * xs.length);
});

test('dbbench teacher - answers from the observation; after an error it runs its SQL again', async (t) => {
  const x = (await tasks).find((y) => y.type === 'other')!;
  const op = teacherAction(x, null, null);
  t.regex(op, /^Action: Operation\n```sql\nSELECT .*;\n```$/);
  t.is(teacherAction(x, op, "[('Foo Bar',), (3,)]"), answerText(['Foo Bar', '3']));
  t.is(teacherAction(x, op, "1054 (42S22): Unknown column 'x' in 'field list'"), op);
  t.is(teacherAction(x, 'Action: Operation\n```sql\nSELECT 1;\n```', '[(1,)]'), op);
  t.deepEqual(resultCells("[('a', 2), (None,), (1.5,)]"), ['a', '2', 'None', '1.5']);
  t.is(resultCells('1064 (42000): You have an error'), null);
  const p = perturbSql(x, new Rng(3));
  t.not(p, op);
  t.regex(p, /^Action: Operation\n```sql\n/);
});

test('dbbench teacher - noisy decisions keep the teacher label and are deterministic', async (t) => {
  const a = await collectDbbench({ episodes: 20, seed: 4, noise: 0.5 });
  const b = await collectDbbench({ episodes: 20, seed: 4, noise: 0.5 });
  t.deepEqual(a, b);
  t.true(a.length > 20);
  const noisy = a.filter((d) => d.actions.some((x, i) => x !== d.labels[i]));
  t.true(noisy.length > 0);
  for (const d of a) t.regex(d.action, /^Action: (Operation\n```sql\n|Answer\nFinal Answer: \[)/);
});

test('dbbench render - the protocol, case and spacing come back from the conversation; garbage stays garbage', async (t) => {
  const tok = await tokP;
  const messages = [
    { role: 'user' as const, content: V02_PROMPT },
    { role: 'assistant' as const, content: 'Ok.' },
    { role: 'user' as const, content: 'What is the Score when the Home team is Dabney Wölfe?\nThe name of this table is Football Cup Matches, and the headers of this table are Tie no,Home team,Score,Win %.' },
  ];
  const op = "Action: Operation\n```sql\nSELECT `Win %`, COUNT(*) FROM `Football Cup Matches` WHERE `Home team` = 'Dabney Wölfe' AND `Tie no` >= 1.5;\n```";
  t.is(renderDbbench(tok.encode(op), tok, messages), "Action: Operation\n```sql\nselect `Win %`, count(*) from `Football Cup Matches` where `Home team` = 'Dabney Wölfe' and `Tie no` >= 1.5;\n```");
  const obs = [...messages, { role: 'assistant' as const, content: op }, { role: 'user' as const, content: "[('2–1 Aet', 3.0)]" }];
  t.is(renderDbbench(tok.encode('Action: Answer\nFinal Answer: ["2–1 Aet", "3.0"]'), tok, obs), 'Action: Answer\nFinal Answer: ["2–1 Aet", "3.0"]');
  t.is(renderDbbench(tok.encode('select the score'), tok, messages), 'select the score');
});

test('dbbench context - the prompt is the head, the question the goal, the table info the room', async (t) => {
  const tok = await tokP;
  const [task] = await synthTasks(new Rng('ctx'), 1);
  const messages = [
    { role: 'user' as const, content: V02_PROMPT },
    { role: 'assistant' as const, content: 'Ok.' },
    { role: 'user' as const, content: `${task!.description}\n${task!.addDescription}` },
    { role: 'assistant' as const, content: teacherAction(task!, null, null) },
    { role: 'user' as const, content: '[]' },
  ];
  const s = segmentMessages(messages);
  t.is(s.goal, task!.description);
  t.is(s.room, task!.addDescription);
  t.true(s.instructions.includes('MySQL'));
  t.deepEqual(s.turns.map((x) => x.kind), ['act', 'obs']);
  const w = buildContext(messages, tok, { maxLen: 256, maxNewTokens: 96 });
  t.true(w.length <= 160);
  t.true(tok.decode(w).includes(tok.decode(tok.encode(task!.description))));
});

test('dbbench vocab - dev cells mostly tokenize to a few tokens', async (t) => {
  const tok = await tokP;
  const cells = loadTasks({ file: 'v0.2/dev' }).flatMap((x) => x.rows.flat()).filter((c): c is string => !!c);
  const lens = cells.map((c) => tok.encode(c).length);
  const mean = lens.reduce((a, b) => a + b, 0) / lens.length;
  const spelled = cells.map((c) => tok.encode(c)).flat().filter((id) => tok.vocab[id]!.startsWith('#')).length / lens.reduce((a, b) => a + b, 0);
  t.log(`dev cells: ${cells.length}, mean ${mean.toFixed(1)} tokens, ${(spelled * 100).toFixed(0)} % spelling tokens`);
  t.true(mean < 12);
});

test('dbbench slots - the table info and backticked names become tslot / cslot K; a reply in slots plays as the teacher through the tokenizer and the renderer', async (t) => {
  const { dbSlotMap, dbSlotMessages, toDbSlots, fromDbSlots, NAME_SLOTS } = await import('../../../policies/targets/lm/dbbench/slots.ts');
  const tok = new LmTokenizer([...(await harvestWords(['dbbench'])), ...NAME_SLOTS.words]);
  const xs = (await renamed).slice(0, 100);
  let wonTok = 0;
  let plainTokens = 0;
  let slotTokens = 0;
  for (const x of xs) {
    const render = (a: string, m: Parameters<typeof renderDbbench>[2]): string => {
      const map = dbSlotMap(m);
      const slotted = toDbSlots(a, map);
      if (a.includes('```sql')) {
        plainTokens += tok.encode(a).length;
        slotTokens += tok.encode(slotted).length;
      }
      return fromDbSlots(renderDbbench(tok.encode(slotted), tok, m), map);
    };
    const rec = await runEpisode(dbbenchEnv(x), { model: teacherModel(x, { render }), seed: 0 });
    if (rec.outcome.won) wonTok++;
  }
  t.log(`teacher through slots, tokens and the renderer: ${wonTok}/${xs.length}; SQL actions ${plainTokens} tokens plain, ${slotTokens} in slots`);
  t.true(wonTok >= 0.95 * xs.length);
  t.true(slotTokens < plainTokens);
  // the context: the table's name is gone, every header keeps its words after its slot
  const x = xs[0]!;
  const msgs = [{ role: 'user' as const, content: `${x.description}\nThe name of this table is ${x.tableName}, and the headers of this table are ${x.columns.join(',')}.` }];
  const map = dbSlotMap(msgs);
  t.is(map.table, x.tableName);
  const out = dbSlotMessages(msgs, map)[0]!.content;
  t.false(out.includes(`is ${x.tableName},`));
  t.true(out.includes(`headers of this table are cslot 1 ${x.columns[0]!},cslot 2 `));
  // back: backticked or bare slots; an unknown slot stays as written; no table info, nothing renamed
  t.is(fromDbSlots('SELECT `cslot 2` FROM `tslot` WHERE cslot 1 = 3 AND `cslot 99` = 1', map), `SELECT \`${x.columns[1]!}\` FROM \`${x.tableName}\` WHERE \`${x.columns[0]!}\` = 3 AND \`cslot 99\` = 1`);
  t.is(fromDbSlots('SELECT 1 FROM `tslot`', dbSlotMap([{ role: 'user', content: 'hi' }])), 'SELECT 1 FROM `tslot`');
});

test('dbbench value slots - spelled and capitalised words of the question and results become vslot K; the teacher plays through them; the rule and the round trip', async (t) => {
  const { dbValueSlotMap, dbValueSlotMessages, toDbValueSlots, fromDbValueSlots, expandValuePieces, isValueWord, NAME_VALUE_SLOTS } = await import('../../../policies/targets/lm/dbbench/slots.ts');
  const tok = new LmTokenizer([...(await harvestWords(['dbbench'])), ...NAME_VALUE_SLOTS.words]);
  const isToken = (w: string): boolean => tok.has(w);
  const xs = (await renamed).slice(0, 100);
  let won = 0;
  let slotted = 0;
  let plain = 0;
  let inSlots = 0;
  for (const x of xs) {
    const render = (a: string, m: Parameters<typeof renderDbbench>[2]): string => {
      const map = dbValueSlotMap(m, isToken);
      const s = toDbValueSlots(a, map);
      if (s.includes('vslot')) slotted++;
      plain += tok.encode(a).length;
      inSlots += tok.encode(s).length;
      return fromDbValueSlots(renderDbbench(tok.encode(s), tok, m, (ps) => expandValuePieces(ps, map)), map);
    };
    const rec = await runEpisode(dbbenchEnv(x), { model: teacherModel(x, { render }), seed: 0 });
    if (rec.outcome.won) won++;
  }
  t.log(`teacher through value slots: ${won}/${xs.length}; ${slotted} actions hold a value slot; ${plain} tokens plain, ${inSlots} in slots`);
  t.true(won >= 0.95 * xs.length);
  t.true(slotted > 20);
  t.true(inSlots < plain);
  // the rule: spelled words and capitalised words are values, a sentence's first vocabulary word and SQL keywords are not
  const q = 'What is the Vorarlberg total for 1998? Insert INTO it.';
  const at = (w: string): boolean => isValueWord(w, q, q.indexOf(w), isToken);
  t.false(at('What'));
  t.true(at('Vorarlberg'));
  t.true(at('1998'));
  t.false(at('total'));
  t.false(at('INTO'));
  // numbering by first appearance from the question on; the prompt before it is left out; the same word twice is one slot
  const msgs = [
    { role: 'user' as const, content: 'You are Zyxwv, a MySQL helper.' },
    { role: 'user' as const, content: `How many Qwertz and qwertz in Vorarlberg?\nThe name of this table is Towns, and the headers of this table are Name,Year.` },
    { role: 'assistant' as const, content: "Action: Operation\n```sql\nSELECT * FROM `Towns` WHERE `Name` = 'Vorarlberg'\n```" },
    { role: 'user' as const, content: "[('Bludenz', '1998')]" },
  ];
  const map = dbValueSlotMap(msgs, isToken);
  t.false(map.values.includes('zyxwv'));
  t.is(map.slotOf.get('qwertz'), 1);
  t.is(map.slotOf.get('vorarlberg'), 2);
  t.deepEqual(map.values, ['qwertz', 'vorarlberg', 'bludenz', '1998']);
  const out = dbValueSlotMessages(msgs, map);
  t.true(out[1]!.content.startsWith('How many vslot 1 and vslot 1 in vslot 2?'));
  t.true(out[1]!.content.includes('headers of this table are cslot 1 Name,cslot 2 Year.'));
  t.is(out[2]!.content, "Action: Operation\n```sql\nSELECT * FROM `tslot` WHERE `cslot 1` = 'vslot 2'\n```");
  // a reply: the slots back as the words, quoted spans as the conversation writes them
  const reply = "Action: Operation\n```sql\nSELECT `cslot 2` FROM `tslot` WHERE `cslot 1` = 'vslot 2'\n```";
  t.is(fromDbValueSlots(renderDbbench(tok.encode(reply), tok, msgs, (ps) => expandValuePieces(ps, map)), map), "Action: Operation\n```sql\nselect `Year` from `Towns` where `Name` = 'Vorarlberg'\n```");
  t.is(fromDbValueSlots('vslot 3 and vslot 77', map), 'Bludenz and vslot 77');
});

test('dbbench DAgger - a student plays other synthetic tasks and the teacher labels each state: its SQL after a failed one, the answer after its own SQL written in another case', async (t) => {
  const { collectDbbench } = await import('../../../policies/targets/lm/dbbench/teacher.ts');
  const base = await collectDbbench({ episodes: 4, seed: 3 });
  // a student that only writes broken SQL: every label is the teacher's operation
  const broken = { name: 'broken', decide: () => Promise.resolve('Action: Operation\n```sql\nSELEC nothing\n```') };
  const a = await collectDbbench({ episodes: 4, seed: 3, student: broken, studentEpisodes: 3 });
  t.deepEqual(a.slice(0, base.length).map((d) => d.action), base.map((d) => d.action));
  const students = a.slice(base.length);
  t.true(students.length >= 3);
  t.true(students.every((d) => d.action.startsWith('Action: Operation')));
  t.true(students.some((d) => d.actions.length > 0 && /SELEC nothing/.test(d.actions[d.actions.length - 1]!)));
  // after its own SQL, up to case and spacing (a student's), the label is the answer; after an error, the SQL again
  const { teacherAction } = await import('../../../policies/targets/lm/dbbench/teacher.ts');
  const more = await synthTasks(new Rng('lm-dbsynth-student:3'), 3, { rename: DEFAULT_RENAME });
  const op = teacherAction(more[0]!, null, null);
  t.true(teacherAction(more[0]!, op.toLowerCase(), '[(1,)]').startsWith('Action: Answer'));
  t.true(teacherAction(more[0]!, op.replace('FROM', 'FROM '), '[(1,)]').startsWith('Action: Answer'));
  t.true(teacherAction(more[0]!, op, "1064 (42000): You have an error in your SQL syntax").startsWith('Action: Operation'));
});

test('dbbench synth - insertColumns mention: the same tasks and table hashes, INSERTs name every column in the order the request says the values, and the teacher wins them through value slots', async (t) => {
  // the order: quoted first, whole words, case aside; a value said twice takes its occurrences in turn; unfound last in header order
  t.deepEqual(mentionOrder("Insert 'Madison' into 'T' with 'San Diego' for 'Location', '1980' for 'Date moved'", ['San Diego', 'Madison', '1980']), [1, 0, 2]);
  t.deepEqual(mentionOrder('gold 0, silver 1 and bronze 0; total 1980', ['0', '1980', '1', '0']), [0, 2, 3, 1]);
  t.deepEqual(mentionOrder('nothing here but 7', ['x', '7', 'y']), [1, 0, 2]);
  t.deepEqual(mentionOrder('Add Rim and Scenic Rim', ['Scenic Rim', 'Rim']), [1, 0]);
  const o = { rename: 0.7, phrasing: 'wide' } as const;
  const plain = await synthTasks(new Rng('cols:1'), 160, o);
  const named = await synthTasks(new Rng('cols:1'), 160, { ...o, insertColumns: 'mention' });
  t.deepEqual(named.map((x) => [x.type, x.description, x.answerMd5, x.tableName]), plain.map((x) => [x.type, x.description, x.answerMd5, x.tableName]));
  const ins = named.filter((x) => x.type === 'INSERT');
  t.true(ins.length >= 20, `${ins.length} INSERTs`);
  let reordered = 0;
  for (const x of ins) {
    const p = parseInsert(x.label[0]!)!;
    t.truthy(p.columns, x.label[0]);
    t.deepEqual([...p.columns!].sort(), [...x.columns].sort(), x.label[0]);
    // found values come in increasing position in the request (case aside)
    const text = x.description.toLowerCase();
    const at = p.values.map((v) => text.indexOf(v.toLowerCase())).filter((i) => i >= 0);
    if (p.columns!.some((c, i) => c !== x.columns[i])) reordered++;
    t.true(at.length >= p.values.length / 2, x.description);
  }
  t.log(`${ins.length} INSERTs name their columns, ${reordered} not in header order; e.g. ${ins.slice(0, 2).map((x) => `${x.description} => ${x.label[0]}`).join(' | ')}`);
  t.true(reordered > 0);
  // reads, UPDATEs and DELETEs are as before
  for (let i = 0; i < named.length; i++) if (named[i]!.type !== 'INSERT') t.deepEqual(named[i], plain[i]);
  const { dbValueSlotMap, toDbValueSlots, fromDbValueSlots, expandValuePieces, NAME_VALUE_SLOTS } = await import('../../../policies/targets/lm/dbbench/slots.ts');
  const tok = new LmTokenizer([...(await harvestWords(['dbbench'])), ...NAME_VALUE_SLOTS.words]);
  let won = 0;
  let wonSlots = 0;
  for (const x of ins) {
    if ((await runEpisode(dbbenchEnv(x), { model: teacherModel(x), seed: 0 })).outcome.won) won++;
    const render = (a: string, m: Parameters<typeof renderDbbench>[2]): string => {
      const map = dbValueSlotMap(m, (w) => tok.has(w));
      return fromDbValueSlots(renderDbbench(tok.encode(toDbValueSlots(a, map)), tok, m, (ps) => expandValuePieces(ps, map)), map);
    };
    if ((await runEpisode(dbbenchEnv(x), { model: teacherModel(x, { render }), seed: 0 })).outcome.won) wonSlots++;
  }
  t.log(`teacher on named INSERTs ${won}/${ins.length}, through value slots and the renderer ${wonSlots}/${ins.length}`);
  t.is(won, ins.length);
  t.true(wonSlots >= 0.95 * ins.length);
});
