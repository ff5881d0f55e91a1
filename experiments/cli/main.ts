import { Command, CommanderError, Option } from 'commander';
import { Hr1Error } from '../../cluster/errors.ts';
import { addClusterOptions, parseAddress, parseDurationOpt, parseLabels, parsePositiveInt, parseResources } from './options.ts';

const program = new Command();
program
  .name('hr1')
  .description('Harness-R1: learn to edit an LLM agent\'s harness from its failures, on a Ray-style actor cluster over NATS')
  .showHelpAfterError('(run with --help for usage)')
  .configureOutput({ outputError: (s, write) => write(s) });

addClusterOptions(
  program
    .command('demo')
    .description('run a small demo of the cluster: a few actors, a few thousand calls, a summary (embedded cluster by default)')
    .option('--shards <n>', 'number of shard actors', parsePositiveInt('--shards'), 4)
    .option('--calls <n>', 'number of calls', parsePositiveInt('--calls'), 4000)
    .option('--in-process', 'use the in-process transport instead of NATS'),
).action(async (o) => {
  const { runDemo } = await import('./demo.ts');
  await runDemo(o);
});

addClusterOptions(
  program
    .command('node')
    .description('join a cluster and host actors until stopped (SIGINT/SIGTERM)')
    .requiredOption('--address <url>', 'NATS address of the cluster (nats://host:port)', parseAddress)
    .option('--resources <list>', 'resources this node offers, e.g. cpu=2,gpu=0 (default: cpu=<cores>,gpu=0)', parseResources)
    .option('--labels <list>', 'labels for placement, e.g. zone=a,tier=gpu (repeatable)', parseLabels)
    .option('--module <file>', 'extra module defining actors to host (repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--node-id <id>', 'node id (default: <host>-<pid>-0)')
    .option('--heartbeat <ms>', 'heartbeat interval, ms or e.g. "500ms"', parseDurationOpt('--heartbeat')),
  { address: false },
).action(async (o) => {
  const { runNode } = await import('./cluster-cmds.ts');
  await runNode(o);
});

addClusterOptions(
  program
    .command('status')
    .description('list the nodes of a cluster, their resources and actors')
    .requiredOption('--address <url>', 'NATS address of the cluster (nats://host:port)', parseAddress)
    .option('--json', 'print JSON instead of tables')
    .option('--wait <ms>', 'how long to collect node replies', parseDurationOpt('--wait'), 500),
  { address: false },
).action(async (o) => {
  const { runStatus } = await import('./cluster-cmds.ts');
  await runStatus(o);
});

const bench = program.command('bench').description('benchmarks that print figures and ratios');
bench
  .command('cluster')
  .description('raw NATS request/reply vs actor calls over NATS, in-process and a direct call (rates, p50/p99, ratios)')
  .option('--address <url>', 'use this NATS server instead of a private one', parseAddress)
  .option('--seconds <s>', 'seconds per row', (v) => {
    const n = Number(v);
    if (!(n > 0 && n <= 600)) throw new CommanderError(2, 'hr1.bad-option', `--seconds must be a number in (0, 600], got "${v}"`);
    return n;
  }, 3)
  .option('--no-pool', 'skip the worker-pool rows')
  .action(async (o) => {
    const { benchCluster } = await import('../bench/cluster.ts');
    await benchCluster({ seconds: o.seconds, pool: o.pool, ...(o.address ? { address: o.address } : {}) });
  });

program.addOption(new Option('--debug', 'print stacks of errors').hideHelp());

async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.stderr.write(`hr1: ${e.message}\n`);
      process.exit(e.exitCode || 2);
    }
    if (e instanceof Hr1Error) {
      process.stderr.write(`hr1: ${e.name} [${e.code}]: ${e.message}\n`);
      if (process.env.HR1_DEBUG) process.stderr.write(`${e.stack}\n`);
      process.exit(2);
    }
    throw e;
  }
}

await main();
