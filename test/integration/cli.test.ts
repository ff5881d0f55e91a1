import test from 'ava';
import { hr1 } from './processes.ts';

test('cli - every subcommand has --help', async (t) => {
  const all = [[], ['demo'], ['node'], ['status'], ['logs'], ['dashboard'], ['bench'], ['bench', 'cluster'], ['bench', 'envs'], ['bench', 'rollout'], ['bench', 'harness'], ['bench', 'learning'], ['bench', 'validator'], ['envs'], ['envs', 'verify'], ['envs', 'replay'], ['eval'], ['serve'], ['patch', 'check'], ['patch', 'show'], ['sim', 'table'], ['packet', 'show'], ['sft', 'build'], ['train'], ['exp'], ['exp', 'main'], ['exp', 'sweep'], ['exp', 'crosstask'], ['exp', 'ablate'], ['exp', 'coevolve'], ['report'], ['episodes'], ['episodes', 'export'], ['zoo', 'build'], ['zoo', 'table']];
  for (const args of all) {
    const p = hr1([...args, '--help']);
    t.is(await p.exited, 0, `hr1 ${args.join(' ')} --help`);
    t.regex(p.out(), /Usage: hr1/);
  }
});

test('cli - invalid options name the option and the fix', async (t) => {
  const cases: [string[], RegExp][] = [
    [['node', '--address', 'nats://127.0.0.1:4222', '--resources', 'cpu=lots'], /--resources.*"cpu=lots" is not NAME=NUMBER; write e\.g\. --resources cpu=2,gpu=0/],
    [['node', '--address', 'http://x', '--resources', 'cpu=1'], /--address.*is not a NATS address; write nats:\/\/host:port/],
    [['node', '--address', 'nats://127.0.0.1:4222', '--labels', 'zone'], /"zone" is not KEY=VALUE/],
    [['demo', '--calls', '-5'], /--calls: must be a positive integer/],
    [['envs', 'verify', 'minecraft'], /unknown env "minecraft"; choose one of alfworld, dbbench, webshop/],
    [['status'], /required option '--address <url>' not specified/],
  ];
  for (const [args, re] of cases) {
    const p = hr1(args);
    t.not(await p.exited, 0, args.join(' '));
    t.regex(p.out(), re);
  }
});

test('cli - a node pointed at a server that is not there says so and exits non-zero', async (t) => {
  const p = hr1(['node', '--address', 'nats://127.0.0.1:1']);
  t.is(await p.exited, 2);
  t.regex(p.out(), /CONNECTION_REFUSED.*is nats-server running there\?/);
});

test('cli - the demo runs on the embedded cluster and its totals match', async (t) => {
  const p = hr1(['demo', '--calls', '2000']);
  t.is(await p.exited, 0, p.out());
  t.regex(p.out(), /embedded cluster: private nats-server/);
  t.regex(p.out(), /2000 calls to 4 actors over nats-embedded .* totals match/);
  const q = hr1(['demo', '--calls', '500', '--in-process']);
  t.is(await q.exited, 0, q.out());
  t.regex(q.out(), /500 calls to 4 actors over inproc/);
});

test('cli - envs replay prints the initial observation and one JSON line per action', async (t) => {
  const p = hr1(['envs', 'replay', 'alfworld', '--game', 'valid_seen/pick_and_place_simple-Pencil-None-Dresser-330/trial_T20190909_071128_012892', '--actions', '/dev/null']);
  const code = await p.exited;
  if (code !== 0 && /UNKNOWN_GAME|no game/i.test(p.out())) {
    t.log(p.out());
  }
  t.is(code, 0, p.out());
  const first = JSON.parse(p.out().trim().split('\n')[0]!) as { observation: string };
  t.regex(first.observation, /You are in the middle of a room/);
});
