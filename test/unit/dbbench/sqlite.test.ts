import test from 'ava';
import { closeAll, expert, FC_TOOLS, liveEpisodes, loadTasks, reset, step, V02_PROMPT, verifyDbbench, benchDbbench, type DbbenchState, type DbbenchTask } from '../../../envs/dbbench/index.ts';
import { checkSandbox, mysqlToSqlite } from '../../../envs/dbbench/dialect.ts';

test.after.always(() => closeAll());

const op = (sql: string): string => `Action: Operation\n\`\`\`sql\n${sql}\n\`\`\``;

function tinyTask(over: Partial<DbbenchTask> = {}): DbbenchTask {
  return {
    id: `unit/${over.type ?? 'other'}/${over.tableName ?? 'People'}`,
    variant: 'v0.2',
    type: 'other',
    description: 'Who lives in Sao Paulo?',
    addDescription: 'The name of this table is People, and the headers of this table are Name,City,Age.',
    tableName: 'People',
    columns: ['Name', 'City', 'Age'],
    rows: [['José', 'São Paulo', '30'], ['Ann', 'Oslo', '41'], ['Bob', 'Oslo', null]],
    label: ['José'],
    sqlQuery: "SELECT Name FROM People WHERE City = 'Sao Paulo'",
    answerMd5: null,
    ...over,
  };
}

async function sql(state: DbbenchState, q: string): Promise<{ state: DbbenchState; obs: string }> {
  const r = await step(state, op(q));
  return { state: r.state, obs: r.observation };
}

test('loadTasks - shipped sets and their counts', (t) => {
  t.is(loadTasks({ file: 'v0.2/dev' }).length, 60);
  t.is(loadTasks({ file: 'v0.2/standard' }).length, 198);
  const fc = loadTasks({ file: 'main-fc/standard' });
  t.is(fc.length, 198);
  t.is(fc[0]?.variant, 'main-fc');
  t.is(loadTasks().length, 198);
});

test('loadTasks - a shipped set is parsed once per process: the same tasks again, in an array of the caller\'s own', (t) => {
  const a = loadTasks({ file: 'v0.2/dev' });
  a.length = 3;
  const b = loadTasks({ file: 'v0.2/dev' });
  t.is(b.length, 60, 'shortening one answer does not shorten the next');
  t.is(b[0], a[0], 'the same parsed task');
  // another variant of the same file is parsed apart
  const fc = loadTasks({ file: 'v0.2/standard', variant: 'main-fc' });
  t.not(fc[0], loadTasks({ file: 'v0.2/standard' })[0]);
  t.is(fc[0]?.variant, 'main-fc');
});

test('loadTasks - a user\'s file is parsed once while it is unchanged, and again once it changes', async (t) => {
  const { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const { SHIPPED_SETS } = await import('../../../envs/dbbench/tasks.ts');
  const dir = mkdtempSync(join(tmpdir(), 'hr1-dbtasks-'));
  try {
    const lines = readFileSync(SHIPPED_SETS['v0.2/dev'].file, 'utf8').trim().split('\n');
    const file = join(dir, 'mine.jsonl');
    writeFileSync(file, `${lines[0]}\n${lines[1]}\n`);
    const a = loadTasks({ file });
    t.is(loadTasks({ file })[0], a[0], 'unchanged: the same parsed task');
    writeFileSync(file, `${lines[0]}\n${lines[1]}\n${lines[2]}\n`);
    // a second apart, as a later edit is, whatever the file system's time resolution
    utimesSync(file, new Date(), new Date(Date.now() + 1000));
    const b = loadTasks({ file });
    t.is(b.length, 3);
    t.not(b[0]!.id, a[0]!.id, 'another file content: another set name (its digest), so other ids');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('loadTasks - numbers keep their Python text, bad input says what to pass', (t) => {
  const std = loadTasks({ file: 'v0.2/standard' });
  t.true(std.some((x) => x.rows.some((r) => r.includes('82562.0'))));
  t.throws(() => loadTasks({ file: '/nope.jsonl' }), { code: 'DBBENCH_DATA_NOT_FOUND', message: /pass a path to an AgentBench dbbench .jsonl/ } as never);
  t.throws(() => loadTasks({ variant: 'v9' as never }), { code: 'DBBENCH_BAD_OPTION', message: /options.variant must be/ } as never);
});

test('reset - the v0.2 opening: prompt, pre-filled "Ok.", then the task', async (t) => {
  const r = await reset(tinyTask());
  t.deepEqual(r.info.messages.map((m) => m.role), ['user', 'agent', 'user']);
  t.is(r.info.messages[0]?.content, V02_PROMPT);
  t.is(r.info.messages[1]?.content, 'Ok.');
  t.is(r.observation, 'Who lives in Sao Paulo?\nThe name of this table is People, and the headers of this table are Name,City,Age.');
  t.deepEqual(JSON.parse(JSON.stringify(r.state)), r.state, 'state is plain data');
});

test('sqlite - MySQL comparison is case- and accent-insensitive', async (t) => {
  let { state } = await reset(tinyTask());
  let r = await sql(state, "SELECT Name FROM People WHERE City = 'sao paulo'");
  t.is(r.obs, "[('José',)]");
  r = await sql(r.state, "SELECT COUNT(*) FROM People WHERE Name IN ('JOSE', 'ann')");
  t.is(r.obs, '[(2,)]');
  r = await sql(r.state, "SELECT Name FROM People WHERE Name LIKE 'jo%'");
  t.is(r.obs, "[('José',)]");
  state = r.state;
  t.pass();
});

test('sqlite - MySQL strings, backticks, double quotes, digit-leading names', async (t) => {
  const task = tinyTask({ tableName: '2019_results', id: 'unit/digits' });
  let { state } = await reset(task);
  let r = await sql(state, 'INSERT INTO 2019_results (`Name`, City) VALUES ("Line\\nTwo", \'It\\\'s\')');
  t.is(r.obs, '[]');
  r = await sql(r.state, 'SELECT Name, City FROM `2019_results` WHERE Age IS NULL AND Name <> "Bob"');
  t.is(r.obs, `[('Line\\nTwo', "It's")]`);
  state = r.state;
  t.pass();
});

test('sqlite - aggregates answer with MySQL types', async (t) => {
  const { state } = await reset(tinyTask());
  let r = await sql(state, 'SELECT SUM(Age), AVG(Age), COUNT(*), MAX(Name) FROM People');
  t.is(r.obs, "[(71.0, 35.5, 3, 'José')]");
  r = await sql(r.state, 'SELECT 7 / 2, CAST(Age AS UNSIGNED) FROM People LIMIT 1');
  t.is(r.obs, '[(3.5, 30)]');
  r = await sql(r.state, "SELECT CONCAT(Name, '-', City) FROM People WHERE Name = 'ann'");
  t.is(r.obs, "[('Ann-Oslo',)]");
});

test('sqlite - errors read like the MySQL server', async (t) => {
  const { state } = await reset(tinyTask());
  let r = await sql(state, 'SELEC * FROM People');
  t.is(r.obs, "1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'SELEC * FROM People' at line 1");
  r = await sql(r.state, 'SELECT * FROM Nope');
  t.is(r.obs, "1146 (42S02): Table 'People.Nope' doesn't exist");
  r = await sql(r.state, 'SELECT Nope FROM People');
  t.is(r.obs, "1054 (42S22): Unknown column 'Nope' in 'field list'");
  r = await sql(r.state, 'SHOW TABLES');
  t.is(r.obs, "[('People',)]");
  r = await sql(r.state, 'DESCRIBE People');
  t.true(r.obs.startsWith("[('Name', 'text', 'YES', '', None, '')"));
});

test('sqlite - sandbox refusals keep the episode going', async (t) => {
  const { state } = await reset(tinyTask());
  let r = await step(state, op("ATTACH DATABASE '/tmp/evil.db' AS evil"));
  t.false(r.done);
  t.regex(r.observation, /ATTACH DATABASE is not allowed/);
  r = await step(r.state, op('PRAGMA table_info(People)'));
  t.regex(r.observation, /PRAGMA is not allowed/);
  r = await step(r.state, op("VACUUM INTO '/tmp/x.db'"));
  t.regex(r.observation, /VACUUM is not allowed/);
  r = await step(r.state, op('SELECT * FROM People a, People b, People c, People d, People e, People f, People g, People h, People i'));
  t.regex(r.observation, /more than 5000 rows/);
  r = await step(r.state, op('SELECT COUNT(*) FROM People'));
  t.is(r.observation, '[(3,)]');
});

test('dialect - translation and sandbox rules', (t) => {
  t.is(mysqlToSqlite("SELECT a FROM `t` WHERE b = 'x\\'y'"), `SELECT a FROM "t" WHERE mysql_ci(b) = 'x''y'`);
  t.is(mysqlToSqlite("UPDATE t SET a = 'X' WHERE b = 'Y'"), `UPDATE t SET a = 'X' WHERE mysql_ci(b) = 'y'`);
  t.is(mysqlToSqlite('SELECT 1 || 0, CAST(x AS SIGNED)'), 'SELECT 1  OR  0, CAST(x AS INTEGER)');
  t.is(checkSandbox('SELECT 1', 'db'), null);
  t.truthy(checkSandbox("select load_file ('/etc/passwd')", 'db'));
  t.truthy(checkSandbox('SELECT * FROM information_schema.tables', 'db'));
  t.truthy(checkSandbox('SET @@global.max_connections = 1', 'db'));
});

test('v0.2 - 15 rounds, then the answer turn still counts', async (t) => {
  let { state } = await reset(tinyTask());
  for (let i = 0; i < 15; i++) state = (await step(state, op('SELECT 1'))).state;
  t.is(state.rounds, 15);
  const r = await step(state, op('SELECT 2'));
  t.true(r.done);
  t.is(r.info.status, 'task_limit_reached');
  t.false(liveEpisodes().includes(state.episodeId), 'database dropped at the end');
  await t.throwsAsync(step(r.state, op('SELECT 1')), { code: 'DBBENCH_EPISODE_DONE', message: /call reset\(\)/ } as never);
});

test('v0.2 - a reply that matches no pattern fails the episode', async (t) => {
  const { state } = await reset(tinyTask());
  const r = await step(state, 'I think it is José.');
  t.true(r.done);
  t.is(r.reward, 0);
  t.is(r.info.status, 'agent_validation_failed');
});

test('v0.2 - expert on a read and on a write scores 1', async (t) => {
  const tasks = loadTasks({ file: 'v0.2/dev' });
  for (const task of [tasks.find((x) => x.type === 'counting')!, tasks.find((x) => x.type === 'UPDATE')!]) {
    let { state } = await reset(task);
    let r = await step(state, expert(state));
    state = r.state;
    r = await step(state, expert(state));
    t.true(r.done);
    t.is(r.reward, 1, task.id);
  }
});

test('main-fc - tool calls, tool messages, commit scores', async (t) => {
  const task = loadTasks({ file: 'main-fc/standard' }).find((x) => x.type === 'INSERT')!;
  const r0 = await reset(task);
  t.is(r0.info.tools, FC_TOOLS);
  t.is(r0.info.messages[0]?.role, 'system');
  let r = await step(r0.state, { content: 'hmm' });
  t.is(r.observation, 'Internal error: No tool calls found despite finish reason.');
  r = await step(r.state, { tool_calls: [{ id: 'a', function: { name: 'execute_sql', arguments: '{bad' } }] });
  t.is(r.observation, 'Error: Failed to parse tool call. Tool call format is incorrect.');
  r = await step(r.state, { tool_calls: [{ id: 'b', function: { name: 'drop_db', arguments: '{}' } }] });
  t.is(r.observation, 'Invalid function call. Please call a tool instead.');
  r = await step(r.state, expert(r.state));
  t.is(r.info.messages[0]?.role, 'tool');
  t.is(r.info.messages[0]?.toolCallId, 'call_0');
  r = await step(r.state, expert(r.state));
  t.true(r.done);
  t.is(r.reward, 1);
});

test('verify - the expert solves ≥ 97% of shipped tasks on SQLite', async (t) => {
  const v = await verifyDbbench({ db: 'sqlite' });
  t.log(v.perType.map((r) => `${r.type} ${r.matched}/${r.total}`).join(', '), `→ ${v.matched}/${v.total}`);
  t.is(v.total, 456);
  t.is(v.threshold, 0.97);
  t.true(v.ok);
});

test('bench - reports both rates', async (t) => {
  const b = await benchDbbench({ backend: 'sqlite', seconds: 0.2 });
  t.true(b.setupsPerSec > 0);
  t.true(b.queryStepsPerSec > 0);
  await t.throwsAsync(benchDbbench({ seconds: 0 }), { code: 'DBBENCH_BAD_OPTION' } as never);
});

test('sqlite - what MySQL rejects is rejected: quoted or bracketed table names, wrong-case table names', async (t) => {
  const { state } = await reset(tinyTask());
  let r = await sql(state, 'SELECT * FROM "People"');
  t.regex(r.obs, /^1064 \(42000\): .* near '"People"' at line 1$/);
  r = await sql(r.state, 'SELECT [Name] FROM People');
  t.regex(r.obs, /^1064 \(42000\)/);
  r = await sql(r.state, 'SELECT COUNT(*) FROM people');
  t.is(r.obs, "1146 (42S02): Table 'People.people' doesn't exist");
});

test('sqlite - text meets number as in MySQL: numeric prefix, non-numbers are 0', async (t) => {
  const task = tinyTask({ id: 'unit/num', rows: [['A', 'x', '9'], ['B', 'y', '10'], ['C', 'z', 'Replay'], ['D', 'w', '10.0']] });
  const { state } = await reset(task);
  let r = await sql(state, 'SELECT Name FROM People WHERE Age > 9.5');
  t.is(r.obs, "[('B',), ('D',)]");
  r = await sql(r.state, 'SELECT COUNT(*) FROM People WHERE Age = 0');
  t.is(r.obs, '[(1,)]');
  r = await sql(r.state, "UPDATE People SET City = 'q' WHERE Age = 10");
  r = await sql(r.state, "SELECT Name FROM People WHERE City = 'Q'");
  t.is(r.obs, "[('B',), ('D',)]");
});
