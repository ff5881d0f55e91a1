import test from 'ava';
import type { Command } from 'commander';
import { program } from '../../experiments/cli/program.ts';
import { hr1 } from './processes.ts';

test('cli - every subcommand has help: each command of the program, walked in-process, has a description and a usage line', (t) => {
  const seen: string[] = [];
  const walk = (c: Command, path: string[]): void => {
    const name = [...path, c.name()].join(' ');
    seen.push(name);
    t.true(c.description().length > 10, `${name}: no description`);
    t.regex(c.helpInformation(), new RegExp(`^Usage: ${name.replace(/ /g, ' ')}`), name);
    for (const sub of c.commands) walk(sub, [...path, c.name()]);
  };
  walk(program, []);
  // the commands a user reaches first, and every experiment, are among them
  for (const want of ['hr1 demo', 'hr1 node', 'hr1 bench cluster', 'hr1 envs verify', 'hr1 eval', 'hr1 train', 'hr1 exp main', 'hr1 exp sweep', 'hr1 exp crosstask', 'hr1 exp ablate', 'hr1 exp coevolve', 'hr1 report', 'hr1 episodes export', 'hr1 zoo build', 'hr1 zoo table', 'hr1 zoo verify']) t.true(seen.includes(want), want);
  t.true(seen.length >= 35, `${seen.length} commands`);
});

test('cli - --help of a real process: the top level, a nested command, a leaf', async (t) => {
  for (const args of [[], ['exp', 'main'], ['zoo', 'build']]) {
    const p = hr1([...args, '--help']);
    t.is(await p.exited, 0, `hr1 ${args.join(' ')} --help`);
    t.regex(p.out(), new RegExp(`Usage: hr1${args.map((a) => ' ' + a).join('')}`));
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
