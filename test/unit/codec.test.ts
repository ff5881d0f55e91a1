import test from 'ava';
import { z } from 'zod';
import { defineActor } from '../../cluster/actor.ts';
import { decode, encode, pack, unpack } from '../../cluster/codec.ts';
import { parseDuration } from '../../cluster/duration.ts';
import { ActorDiedError, CodecError, ConfigError, fromWire } from '../../cluster/errors.ts';

const S = z.object({ a: z.number(), b: z.array(z.string()) });

test('codec - encode then decode gives the value back', (t) => {
  const v = { a: 1.5, b: ['x', 'ÿ'] };
  t.deepEqual(decode(S, encode(S, v, 'v'), 'v'), v);
});

test('codec - malformed bytes become MALFORMED_MESSAGE, a wrong shape SCHEMA_INVALID with the path', (t) => {
  for (const bad of [[0xc1], [0x92, 0x01], [0xdb, 0xff, 0xff]]) {
    const e1 = t.throws(() => unpack(new Uint8Array(bad)), { instanceOf: CodecError });
    t.is(e1!.code, 'MALFORMED_MESSAGE');
  }
  const e2 = t.throws(() => decode(S, pack({ a: 'no', b: [1] }), 'step input'), { instanceOf: CodecError });
  t.is(e2!.code, 'SCHEMA_INVALID');
  t.regex(e2!.message, /step input does not match its schema: a: .*; b\.0: /);
});

test('errors - wire errors come back as their typed class with actor, method and node', (t) => {
  const w = new ActorDiedError('gone', { actor: 'A-1', method: 'step', node: 'n1' }).toWire();
  const e = fromWire(unpack(pack(w)) as typeof w);
  t.true(e instanceof ActorDiedError);
  t.is(e.actor, 'A-1');
  t.is(e.method, 'step');
  t.is(e.node, 'n1');
  t.true(e.retryable);
});

test('durations - ms numbers and strings like 30s', (t) => {
  t.is(parseDuration(250), 250);
  t.is(parseDuration('30s'), 30_000);
  t.is(parseDuration('1.5m'), 90_000);
  t.is(parseDuration('20ms'), 20);
  t.throws(() => parseDuration('soon'), { message: /use ms as a number or a string like/ });
});

test('defineActor - rejects reserved or missing method handlers and bad options with the path', (t) => {
  t.throws(() => defineActor({ name: 'Bad1', protocol: { then: { input: z.null(), output: z.null() } }, create: () => ({}), handlers: { then: () => null } }), { instanceOf: ConfigError, message: /method name "then" is not allowed/ });
  t.throws(() => defineActor({ name: 'Bad2', protocol: { go: { input: z.null(), output: z.null() } }, create: () => ({}), handlers: {} as never }), { instanceOf: ConfigError, message: /defineActor\.handlers\.go/ });
  const Ok = defineActor({ name: 'OkActor', protocol: { go: { input: z.null(), output: z.null() } }, create: () => ({}), handlers: { go: () => null } });
  t.throws(() => Ok.options({ maxRestarts: -2 }), { instanceOf: ConfigError, message: /OkActor\.options\.maxRestarts/ });
  t.throws(() => Ok.options({ resources: { CPU: 1 } }), { instanceOf: ConfigError, message: /resources\.CPU.*lowercase words/ });
  t.throws(() => Ok.options({ replica: 2 } as never), { instanceOf: ConfigError });
});
