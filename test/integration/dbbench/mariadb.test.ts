// DBBench on a real MariaDB: a private server started by the test itself (own datadir, free port).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { closeAll, findMariadb, liveEpisodes, loadTasks, MysqlBackend, reset, startMariadb, step, useBackend, verifyDbbench, type DbbenchState, type MariadbServer } from '../../../envs/dbbench/index.ts';

const HAVE = findMariadb() !== null;
if (!HAVE) console.log('[dbbench/mariadb] SKIPPED: mariadbd not found; install it with `apt-get install -y mariadb-server`');
const maybe = HAVE ? test.serial : test.serial.skip;

let srv: MariadbServer | null = null;
let backend: MysqlBackend | null = null;

test.before(async () => {
  if (!HAVE) return;
  srv = await startMariadb();
  // short limits so the limit tests are quick
  backend = new MysqlBackend({ url: srv.url, statementTimeoutMs: 1500, maxRows: 200 });
  useBackend(backend);
});

test.after.always(async () => {
  await closeAll();
  await srv?.stop();
});

const op = (sql: string): string => `Action: Operation\n\`\`\`sql\n${sql}\n\`\`\``;
const tasks = loadTasks({ file: 'v0.2/dev' });
const readTask = tasks.find((t) => t.type === 'counting')!;

async function episode(): Promise<DbbenchState> {
  return (await reset(readTask, { db: backend! })).state;
}

/** run one SQL step; asserts the episode goes on */
async function run(t: { false: (v: boolean, m?: string) => void }, state: DbbenchState, sql: string) {
  const r = await step(state, op(sql));
  t.false(r.done, 'the episode goes on after a refused statement');
  return r;
}

maybe('verify - the expert solves ≥ 99% of shipped tasks on MariaDB', async (t) => {
  const v = await verifyDbbench({ db: srv!.url });
  t.log(v.perType.map((r) => `${r.type} ${r.matched}/${r.total}`).join(', '), `→ ${v.matched}/${v.total}`);
  t.true(v.ok, `rate ${v.rate} below ${v.threshold}; misses: ${v.misses.map((m) => m.taskId).join(', ')}`);
  t.is(v.threshold, 0.99);
});

maybe('results - rows come back as Python reprs, errors as server texts', async (t) => {
  const s = await episode();
  const r1 = await run(t, s, `SELECT COUNT(*) FROM \`${readTask.tableName}\``);
  t.regex(r1.observation, /^\[\(\d+,\)\]$/);
  const r2 = await run(t, r1.state, `SELECT SUM(\`${readTask.columns[0]}\`) FROM \`${readTask.tableName}\``);
  t.regex(r2.observation, /^\[\([\d.e+-]+,\)\]$/);
  const r3 = await run(t, r2.state, 'SELEC 1');
  t.regex(r3.observation, /^1064 \(42000\): You have an error in your SQL syntax/);
  const r4 = await run(t, r3.state, `SELECT * FROM \`${readTask.tableName}\``);
  t.true(r4.observation.length <= 811);
});

maybe('security - ATTACH is refused and the episode goes on', async (t) => {
  const r = await run(t, await episode(), "ATTACH DATABASE '/tmp/x.db' AS x");
  t.regex(r.observation, /DBBench sandbox: ATTACH DATABASE is not allowed/);
});

maybe('security - LOAD_FILE is refused and the episode goes on', async (t) => {
  const r = await run(t, await episode(), "SELECT LOAD_FILE('/etc/passwd')");
  t.regex(r.observation, /LOAD_FILE\(\) \(reading files from the server\) is not allowed/);
  const r2 = await run(t, r.state, "LOAD DATA INFILE '/etc/passwd' INTO TABLE t");
  t.regex(r2.observation, /LOAD DATA/);
});

maybe('security - INTO OUTFILE is refused and the episode goes on', async (t) => {
  const r = await run(t, await episode(), `SELECT * FROM \`${readTask.tableName}\` INTO OUTFILE '/tmp/out.txt'`);
  t.regex(r.observation, /INTO OUTFILE \(writing files on the server\) is not allowed/);
});

maybe('security - other databases are out of reach (sandbox and server privileges)', async (t) => {
  const a = await episode();
  const r1 = await run(t, a, 'SELECT * FROM mysql.user');
  t.regex(r1.observation, /reading another database \('mysql'\)/);
  const r2 = await run(t, r1.state, 'USE mysql');
  t.regex(r2.observation, /switching to another database/);
  // a neighbour episode's database: the sandbox lets it through, the per-episode user is denied
  const b = await episode();
  const dbs = await backend!.listEpisodeDatabases();
  const other = dbs.find((d) => !d.endsWith(`_${a.episodeId.split('#')[2]}`) && d !== dbs[0]) ?? dbs[dbs.length - 1]!;
  const r3 = await run(t, r2.state, `SELECT COUNT(*) FROM \`${other}\`.\`${readTask.tableName}\``);
  t.regex(r3.observation, /^(1142|1044) \(42000\): .*(denied|Access)/);
  const r4 = await run(t, r3.state, 'SHOW DATABASES');
  t.is((r4.observation.match(/dbb_/g) ?? []).length, 1, 'SHOW DATABASES lists only the episode database');
  const r5 = await run(t, r4.state, 'CREATE DATABASE evil');
  t.regex(r5.observation, /CREATE DATABASE is not allowed/);
  const r6 = await run(t, r5.state, "CREATE USER 'x'@'%'");
  t.regex(r6.observation, /CREATE USER is not allowed/);
  void b;
});

maybe('security - huge result sets are refused and the episode goes on', async (t) => {
  const tn = `\`${readTask.tableName}\``;
  const r = await run(t, await episode(), `SELECT * FROM ${tn} a, ${tn} b, ${tn} c LIMIT 100000`);
  t.regex(r.observation, /the result has more than 200 rows; add a LIMIT or aggregate/);
  const r2 = await run(t, r.state, `SELECT COUNT(*) FROM ${tn}`);
  t.regex(r2.observation, /^\[\(\d+,\)\]$/, 'the session still answers');
});

maybe('security - every statement has a time limit; the episode goes on', async (t) => {
  // 10^9 rows to count (MariaDB caps recursion at 1000 iterations, so cross-join the CTE)
  const slow = 'WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) SELECT COUNT(*) FROM c a, c b, c d';
  const r = await run(t, await episode(), slow);
  t.regex(r.observation, /^1969 \(70100\): Query execution was interrupted \(max_statement_time exceeded\)/);
  const r2 = await run(t, r.state, 'SET SESSION max_statement_time = 0');
  t.regex(r2.observation, /changing max_statement_time is not allowed/);
  const r3 = await run(t, r2.state, 'SELECT SLEEP(10)');
  t.regex(r3.observation, /SLEEP\(\) is not allowed/);
});

maybe('lifecycle - the database and user are dropped when the episode ends', async (t) => {
  const before = await backend!.listEpisodeDatabases();
  let { state } = await reset(readTask, { db: backend! });
  t.is((await backend!.listEpisodeDatabases()).length, before.length + 1);
  const r = await step(state, 'Action: Answer\nFinal Answer: ["1"]');
  state = r.state;
  t.true(r.done);
  t.deepEqual(await backend!.listEpisodeDatabases(), before);
});

maybe('lifecycle - a step that throws still drops the database', async (t) => {
  const before = await backend!.listEpisodeDatabases();
  const { state } = await reset(readTask, { db: backend! });
  await t.throwsAsync(step(state, { tool_calls: [] }), { code: 'DBBENCH_BAD_ACTION' } as never);
  t.false(liveEpisodes().includes(state.episodeId));
  t.deepEqual(await backend!.listEpisodeDatabases(), before);
});

maybe('lifecycle - databases of a crashed process are swept', async (t) => {
  const child = fileURLToPath(new URL('./crash-child.ts', import.meta.url));
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn(process.execPath, ['--import=tsx', child, srv!.url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let s = '';
    p.stdout.on('data', (d: Buffer) => (s += d.toString()));
    p.on('exit', (_code, signal) => (signal === 'SIGKILL' ? resolve(s) : reject(new Error(`child exited without crashing: ${s}`))));
  });
  const name = out.trim().split('\n').pop() ?? '';
  t.regex(name, /^dbb_/);
  t.true((await backend!.listEpisodeDatabases()).includes(name), 'the crashed episode left its database');
  const dropped = await backend!.sweep();
  t.true(dropped.includes(name));
  t.false((await backend!.listEpisodeDatabases()).includes(name));
});

maybe('rehydration - a worker without the session rebuilds it from the SQL log', async (t) => {
  const write = tasks.find((x) => x.type === 'INSERT')!;
  let { state } = await reset(write, { db: backend! });
  state = (await step(state, op(write.label[0]!))).state;
  // simulate another worker: drop the live session, keep the plain state
  const { closeEpisode } = await import('../../../envs/dbbench/index.ts');
  await closeEpisode(state.episodeId);
  const r = await step(state, 'Action: Answer\nFinal Answer: []');
  t.is(r.reward, 1);
});
