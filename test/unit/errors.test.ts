/**
 * One error family: every error class of the project extends Hr1Error, carries its literal code,
 * its fields and `cause`, and crosses an actor boundary the way its family's wire policy says.
 */
import test from 'ava';
import { z } from 'zod';
import { defineActor } from '../../cluster/actor.ts';
import { BusClosedError, BusNoRespondersError, BusTimeoutError } from '../../cluster/bus.ts';
import { ActorDiedError, ActorTaskError, CodecError, ConfigError, Hr1Error, PoolTaskError, fromWire, toWire } from '../../cluster/errors.ts';
import { init } from '../../cluster/init.ts';
import { AlfworldBadGameError, AlfworldError } from '../../envs/alfworld/errors.ts';
import { GrammarSyntaxError } from '../../envs/alfworld/grammar.ts';
import { PddlSyntaxError } from '../../envs/alfworld/pddl.ts';
import { EnvError } from '../../envs/contract.ts';
import { DbbenchError, isDbbenchError } from '../../envs/dbbench/errors.ts';
import { WebshopBadDataError, WebshopError, WebshopMissingFileError, WebshopOptionError } from '../../envs/webshop/errors.ts';
import { HarnessError, isHarnessError } from '../../harness/errors.ts';
import { RuleFault } from '../../harness/rules.ts';
import { LearnerDependencyError, LearnerDiedError, LearnerOpError, LearnerProtocolError, LearnerTimeoutError, SamplerError } from '../../learner/errors.ts';
import { EngineerError, MissingEvaluationError } from '../../policies/engineer/errors.ts';
import { ValidatorError, ValidatorModelMissingError } from '../../policies/scorer/errors.ts';
import { LmNotBuiltError, LmTargetError } from '../../policies/targets/lm/errors.ts';
import { OpenAIHttpError, OpenAIRetriesExhaustedError, OpenAITimeoutError } from '../../policies/targets/openai.ts';
import { ServeError } from '../../policies/targets/serve.ts';
import { TargetSpecError } from '../../policies/targets/spec.ts';
import { ExpError } from '../../experiments/runner/errors.ts';

const root = new Error('the underlying failure');

interface Case {
  err: Hr1Error;
  name: string;
  code: string;
  message?: string | RegExp;
  fields?: Record<string, unknown>;
  /** whether the case was built with `cause: root` */
  cause?: boolean;
}

const cases: Case[] = [
  { err: new ActorDiedError('gone', { cause: root }), name: 'ActorDiedError', code: 'ACTOR_DIED', fields: { retryable: true }, cause: true },
  { err: new CodecError('SCHEMA_INVALID', 'bad input', { cause: root }), name: 'CodecError', code: 'SCHEMA_INVALID', cause: true },
  { err: new ConfigError('a.b', 'must be positive', { cause: root }), name: 'ConfigError', code: 'CONFIG', message: 'a.b: must be positive', fields: { path: 'a.b' }, cause: true },
  { err: new BusNoRespondersError('hr1.x'), name: 'Error', code: 'NO_RESPONDERS', message: 'no responders on hr1.x', fields: { subject: 'hr1.x' } },
  { err: new BusTimeoutError('hr1.x', 50), name: 'Error', code: 'TIMEOUT', fields: { subject: 'hr1.x', timeoutMs: 50 } },
  { err: new BusClosedError('hr1.x', 'closed'), name: 'Error', code: 'BUS_CLOSED', message: 'cannot send on hr1.x: closed' },
  { err: new AlfworldError('ALFWORLD_BAD_DATA', 'corrupt', { file: 'f.gz', field: 'games', cause: root }), name: 'AlfworldError', code: 'ALFWORLD_BAD_DATA', message: 'corrupt (file f.gz, field games)', fields: { file: 'f.gz', field: 'games' }, cause: true },
  { err: new AlfworldBadGameError('no task', 'g.json', 'grammar', root), name: 'AlfworldBadGameError', code: 'ALFWORLD_BAD_GAME', message: 'no task (file g.json, field grammar)', fields: { file: 'g.json', field: 'grammar' }, cause: true },
  { err: new GrammarSyntaxError('not JSON', 'grammar:0'), name: 'GrammarSyntaxError', code: 'ALFWORLD_GRAMMAR_SYNTAX', message: 'not JSON', fields: { field: 'grammar:0' } },
  { err: new PddlSyntaxError('unbalanced', 'pddl_domain'), name: 'PddlSyntaxError', code: 'ALFWORLD_PDDL_SYNTAX', message: 'unbalanced', fields: { field: 'pddl_domain' } },
  { err: new WebshopError('WEBSHOP_BAD_STATE', 'bad', { field: 'state', cause: root }), name: 'WebshopError', code: 'WEBSHOP_BAD_STATE', message: 'bad (field state)', fields: { field: 'state', file: undefined }, cause: true },
  { err: new WebshopBadDataError('not JSON', 'items.json', '<root>', root), name: 'WebshopBadDataError', code: 'WEBSHOP_BAD_DATA', message: 'not JSON (file items.json, field <root>)', fields: { file: 'items.json', field: '<root>' }, cause: true },
  { err: new WebshopMissingFileError('missing', 'goals.json'), name: 'WebshopMissingFileError', code: 'WEBSHOP_MISSING_FILE', fields: { file: 'goals.json' } },
  { err: new WebshopOptionError('WEBSHOP_UNKNOWN_GOAL', 'no goal', 'goal'), name: 'WebshopOptionError', code: 'WEBSHOP_UNKNOWN_GOAL', fields: { field: 'goal' } },
  { err: new DbbenchError('DBBENCH_BAD_DATA', 'not JSON', { line: 3 }, { cause: root }), name: 'DbbenchError', code: 'DBBENCH_BAD_DATA', message: 'not JSON', fields: { details: { line: 3 } }, cause: true },
  { err: new HarnessError('HARNESS_BAD_PATCH', 'bad patch', { path: 'rules[0]' }, { cause: root }), name: 'HarnessError', code: 'HARNESS_BAD_PATCH', message: 'bad patch', fields: { details: { path: 'rules[0]' } }, cause: true },
  { err: new RuleFault('timeout', 'matches /a+/: timed out'), name: 'Error', code: 'RULE_TIMEOUT', message: 'matches /a+/: timed out', fields: { kind: 'timeout' } },
  { err: new LearnerDependencyError('/usr/bin/python3', ['torch'], 'no module', { cause: root }), name: 'LearnerDependencyError', code: 'LEARNER_DEPENDENCY', fields: { python: '/usr/bin/python3', missing: ['torch'] }, cause: true },
  { err: new LearnerDiedError('train', 1, null, ''), name: 'LearnerDiedError', code: 'LEARNER_DIED', fields: { op: 'train', exitCode: 1, signal: null, retryable: true } },
  { err: new LearnerOpError('load', 'CheckpointError', 'corrupt', 'tb'), name: 'LearnerOpError', code: 'LEARNER_CHECKPOINT', fields: { op: 'load', type: 'CheckpointError', remoteStack: 'tb' } },
  { err: new LearnerProtocolError('bad frame', { cause: root }), name: 'LearnerProtocolError', code: 'LEARNER_PROTOCOL', cause: true },
  { err: new LearnerTimeoutError('train', 1000), name: 'LearnerTimeoutError', code: 'LEARNER_TIMEOUT', fields: { op: 'train', timeoutMs: 1000 } },
  { err: new SamplerError('SAMPLER_MODEL', 'no model', { cause: root }), name: 'SamplerError', code: 'SAMPLER_MODEL', cause: true },
  { err: new EngineerError('ENGINEER_BAD_RECORD', 'bad record', { field: 'records[3]', cause: root }), name: 'EngineerError', code: 'ENGINEER_BAD_RECORD', fields: { field: 'records[3]' }, cause: true },
  { err: new MissingEvaluationError('base', 'env failed', [], root), name: 'MissingEvaluationError', code: 'ENGINEER_EVAL_FAILED', fields: { side: 'base', episodes: [], retryable: true }, cause: true },
  { err: new LmTargetError('LM_BAD_META', 'bad meta', { cause: root }), name: 'LmTargetError', code: 'LM_BAD_META', cause: true },
  { err: new LmNotBuiltError('tiny', '/models/tiny'), name: 'LmNotBuiltError', code: 'LM_NOT_BUILT', fields: { target: 'lm/tiny', dir: '/models/tiny', command: 'hr1 zoo build --only tiny' } },
  { err: new ValidatorError('VALIDATOR_BAD_OPTION', 'too big', { field: 'k', cause: root }), name: 'ValidatorError', code: 'VALIDATOR_BAD_OPTION', fields: { field: 'k' }, cause: true },
  { err: new ValidatorModelMissingError('path:/x.onnx', root), name: 'ValidatorModelMissingError', code: 'VALIDATOR_MODEL_MISSING', fields: { source: 'path:/x.onnx' }, cause: true },
  { err: new TargetSpecError('nope', 'bad spec', { cause: root }), name: 'TargetSpecError', code: 'TARGET_SPEC', fields: { spec: 'nope' }, cause: true },
  { err: new OpenAIHttpError(503, 'http://h/v1', 'busy', 'HTTP 503'), name: 'OpenAIHttpError', code: 'OPENAI_HTTP', fields: { status: 503, url: 'http://h/v1', retryable: true } },
  { err: new ServeError('SERVE_LISTEN', 'port in use', { cause: root }), name: 'ServeError', code: 'SERVE_LISTEN', cause: true },
  { err: new ExpError('EXP_CONFIG', 'bad option', { path: 'test.tasks', cause: root }), name: 'ExpError', code: 'EXP_CONFIG', fields: { path: 'test.tasks' }, cause: true },
  { err: new EnvError('UNKNOWN_TASK', 'no task', { cause: root }), name: 'EnvError', code: 'UNKNOWN_TASK', cause: true },
];

for (const c of cases) {
  test(`family - ${c.err.constructor.name} [${c.code}] is an Hr1Error with its code, fields and cause`, (t) => {
    const e = c.err;
    t.true(e instanceof Hr1Error);
    t.true(e instanceof Error);
    t.is(e.name, c.name);
    t.is(e.code, c.code);
    if (typeof c.message === 'string') t.is(e.message, c.message);
    else if (c.message) t.regex(e.message, c.message);
    for (const [k, v] of Object.entries(c.fields ?? {})) t.deepEqual((e as unknown as Record<string, unknown>)[k], v, k);
    if (c.cause) t.is(e.cause, root);
    else t.false('cause' in e);
  });
}

test('family - wrapping errors pass their cause through', (t) => {
  const timeout = new OpenAITimeoutError('http://h/v1', 10);
  const gaveUp = new OpenAIRetriesExhaustedError(3, timeout);
  t.is(gaveUp.cause, timeout);
  t.is(gaveUp.lastCode, 'OPENAI_TIMEOUT');
  // the cross-realm guards still recognise the re-based families
  t.true(isHarnessError(new HarnessError('HARNESS_BAD_JSON', 'x')));
  t.true(isDbbenchError(new DbbenchError('DBBENCH_BAD_ACTION', 'x')));
});

test('wire - a task family is sent exactly like a plain Error, plus its code in data.taskCode', (t) => {
  const where = { actor: 'a1', method: 'step', node: 'n1' };
  const plain = new Error('no such table');
  const typed = new DbbenchError('DBBENCH_BAD_ACTION', 'no such table', { sql: 'SELECT' });
  typed.stack = plain.stack;
  const wp = toWire(plain, 'ACTOR_TASK', where);
  const wt = toWire(typed, 'ACTOR_TASK', where);
  t.deepEqual({ ...wt, data: undefined }, wp);
  t.deepEqual(wt.data, { taskCode: 'DBBENCH_BAD_ACTION' });
  const back = fromWire(wt);
  t.true(back instanceof ActorTaskError);
  t.is((back as ActorTaskError).taskCode, 'DBBENCH_BAD_ACTION');
  t.is(back.message, 'no such table');
  // an own family keeps its code on the wire, as before
  t.is(toWire(new EnvError('UNKNOWN_ENV', 'x'), 'ACTOR_TASK', where).code, 'UNKNOWN_ENV');
});

test('wire - PoolTaskError reads the worker-side code as taskCode', (t) => {
  t.is(new PoolTaskError('threw', { data: { taskCode: 'ALFWORLD_BAD_STATE' } }).taskCode, 'ALFWORLD_BAD_STATE');
  t.is(new PoolTaskError('threw').taskCode, undefined);
});

/** An actor whose handlers throw one error of each wire policy. */
const Thrower = defineActor({
  name: 'ErrorsTestThrower',
  protocol: {
    throw: { input: z.enum(['dbbench', 'harness', 'alfworld', 'plain', 'env', 'exp']), output: z.null() },
  },
  create: () => ({}),
  handlers: {
    throw: (_s, kind) => {
      if (kind === 'dbbench') throw new DbbenchError('DBBENCH_BAD_ACTION', 'the action is not SQL', { action: 'hi' });
      if (kind === 'harness') throw new HarnessError('HARNESS_SANDBOX_UNAVAILABLE', 'no sandbox', {}, { cause: root });
      if (kind === 'alfworld') throw new AlfworldError('ALFWORLD_BAD_STATE', 'state does not belong to game g', { field: 'state' });
      if (kind === 'env') throw new EnvError('UNKNOWN_TASK', 'no task "t9"');
      if (kind === 'exp') throw new ExpError('EXP_CONFIG', 'bad option', { path: 'x' });
      throw new Error('kaput');
    },
  },
});

test('wire - a domain error thrown in a handler arrives as ActorTaskError with its code as taskCode', async (t) => {
  // the in-process transport: every reply still goes through the node's toWire and the codec
  const rt = await init({ inProcess: true });
  try {
    const h = await rt.cluster.spawn(Thrower);
    const db = await t.throwsAsync(h.throw('dbbench'), { instanceOf: ActorTaskError });
    t.is(db!.code, 'ACTOR_TASK');
    t.is((db as ActorTaskError).taskCode, 'DBBENCH_BAD_ACTION');
    t.is(db!.name, 'ActorTaskError');
    t.is(db!.message, 'the action is not SQL');
    t.is(db!.method, 'throw');
    t.false(db!.retryable);

    const hr = await t.throwsAsync(h.throw('harness'), { instanceOf: ActorTaskError });
    t.is((hr as ActorTaskError).taskCode, 'HARNESS_SANDBOX_UNAVAILABLE');
    const alf = await t.throwsAsync(h.throw('alfworld'), { instanceOf: ActorTaskError });
    t.is((alf as ActorTaskError).taskCode, 'ALFWORLD_BAD_STATE');
    t.is(alf!.message, 'state does not belong to game g (field state)');

    // a plain Error: as before, no task code
    const plain = await t.throwsAsync(h.throw('plain'), { instanceOf: ActorTaskError });
    t.is((plain as ActorTaskError).taskCode, undefined);

    // families that were Hr1Errors already keep travelling under their own code
    const env = await t.throwsAsync(h.throw('env'), { instanceOf: Hr1Error });
    t.false(env instanceof ActorTaskError);
    t.is(env!.code, 'UNKNOWN_TASK');
    t.is(env!.message, 'no task "t9"');
    const exp = await t.throwsAsync(h.throw('exp'), { instanceOf: Hr1Error });
    t.is(exp!.code, 'EXP_CONFIG');
  } finally {
    await rt.shutdown();
  }
});
