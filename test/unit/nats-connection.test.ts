/**
 * The connection settings checked before anything connects: credentials inside an address,
 * redaction, the TLS files (cluster/tls.ts), the HR1_NATS_TLS_* variables, and their way
 * through init()'s options and the CLI's flags.
 */
import test from 'ava';
import { InvalidArgumentError } from 'commander';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasCredentials, redactAddress, refuseCredentialsInUrl } from '../../cluster/address.ts';
import { authFromEnv, NatsBus } from '../../cluster/bus-nats.ts';
import { ConnectionError } from '../../cluster/errors.ts';
import { resolveInitOptions } from '../../cluster/init.ts';
import { resolveTls, tlsFailure, tlsFromEnv } from '../../cluster/tls.ts';
import { authOf } from '../../experiments/commands/runtime.ts';
import { parseAddress } from '../../experiments/cli/options.ts';

const dir = mkdtempSync(join(tmpdir(), 'hr1-conn-unit-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));
const notPem = join(dir, 'not.pem');
writeFileSync(notPem, 'this is not a certificate\n');

test('address - credentials inside a URL are found, redacted and refused without showing the password', (t) => {
  t.true(hasCredentials('nats://bob:hunter2@h:4222'));
  t.true(hasCredentials('tls://tok3n@h:4222'));
  t.true(hasCredentials('bob:pw@h:4222'));
  t.false(hasCredentials('nats://h:4222'));
  t.false(hasCredentials('h:4222'));
  t.is(redactAddress('nats://bob:hunter2@h:4222, nats://h2:4222'), 'nats://***@h:4222,nats://h2:4222');
  t.is(redactAddress('bob:pw@h:1'), '***@h:1');
  t.notThrows(() => refuseCredentialsInUrl('nats://a:1,tls://b:2'));
  for (const a of ['nats://bob:hunter2@127.0.0.1:4222', 'nats://127.0.0.1:1,tls://bob:hunter2@b:2']) {
    const e = t.throws(() => refuseCredentialsInUrl(a), { instanceOf: ConnectionError });
    t.is(e.code, 'CREDENTIALS_IN_URL');
    t.regex(e.message, /carries credentials in the URL.*--user\/--pass or --token/);
    t.notRegex(e.message, /hunter2|bob/);
  }
});

test('address - the CLI parser refuses credentials with the typed error (commander would echo the value), and still checks the form', (t) => {
  const e = t.throws(() => parseAddress('nats://bob:hunter2@h:4222'), { instanceOf: ConnectionError });
  t.notRegex(e.message, /hunter2/);
  t.is(parseAddress('tls://127.0.0.1:4222'), 'tls://127.0.0.1:4222');
  t.throws(() => parseAddress('http://x/y'), { instanceOf: InvalidArgumentError });
});

test('address - NatsBus.connect refuses credentials in the URL before connecting', async (t) => {
  const e = await t.throwsAsync(NatsBus.connect({ address: 'nats://bob:hunter2@127.0.0.1:1' }), { instanceOf: ConnectionError });
  t.is(e.code, 'CREDENTIALS_IN_URL');
  t.notRegex(e.message, /hunter2/);
});

test('tls - no TLS without a tls:// address or a file; tls:// without a CA, a certificate without its key, unusable files: TLS_CONFIG naming the option', (t) => {
  t.is(resolveTls('nats://h:4222', {}), undefined);
  const cases: [string, Parameters<typeof resolveTls>[1], RegExp][] = [
    ['tls://h:4222', {}, /^the address tls:\/\/h:4222 asks for TLS but no CA .*--tls-ca \(or HR1_NATS_TLS_CA\).*never falls back to plain text/],
    ['nats://h:4222', { tlsCert: notPem, tlsKey: notPem }, /a client certificate was given but no CA .*--tls-ca/],
    ['tls://h:4222', { tlsCa: join(dir, 'missing.pem') }, /^--tls-ca .*missing\.pem: cannot read it \(ENOENT.*pass a readable PEM file to --tls-ca \(or HR1_NATS_TLS_CA\)/],
    ['tls://h:4222', { tlsCa: notPem }, /^--tls-ca .*not\.pem: not a PEM certificate/],
    ['tls://h:4222', { tlsCa: notPem, tlsCert: notPem }, /^--tls-cert was given without --tls-key; .*pass --tls-key \(or HR1_NATS_TLS_KEY\) too/],
    ['tls://h:4222', { tlsCa: notPem, tlsKey: notPem }, /^--tls-key was given without --tls-cert/],
    ['tls://bob:hunter2@h:4222', {}, /tls:\/\/\*\*\*@h:4222 asks for TLS/],
  ];
  for (const [address, files, re] of cases) {
    const e = t.throws(() => resolveTls(address, files), { instanceOf: ConnectionError }, `${address} ${JSON.stringify(files)}`);
    t.is(e.code, 'TLS_CONFIG');
    t.regex(e.message, re);
    t.notRegex(e.message, /hunter2/);
  }
});

test('tls - handshake failures are told apart from other refusals', (t) => {
  const tls = { caFile: 'ca.pem' };
  t.regex(tlsFailure(Object.assign(new Error('unable to verify the first certificate'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }), undefined)!, /cannot verify.*the server requires TLS: pass the CA/);
  t.regex(tlsFailure(Object.assign(new Error('tls'), { code: 'SERVER_OPT_NA' }), tls)!, /offers no TLS/);
  t.regex(tlsFailure(Object.assign(new Error('x'), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' }), tls)!, /subjectAltName/);
  t.regex(tlsFailure(Object.assign(new Error('TIMEOUT'), { code: 'TIMEOUT' }), tls)!, /no client certificate was given.*--tls-cert and --tls-key/);
  t.is(tlsFailure(Object.assign(new Error('TIMEOUT'), { code: 'TIMEOUT' }), undefined), undefined);
  t.is(tlsFailure(Object.assign(new Error('refused'), { code: 'CONNECTION_REFUSED' }), tls), undefined);
});

test('tls - the HR1_NATS_TLS_* variables, init() options and the CLI options carry the three files', (t) => {
  const env = { HR1_NATS_TLS_CA: '/ca.pem', HR1_NATS_TLS_CERT: '/c.pem', HR1_NATS_TLS_KEY: '/k.pem', HR1_NATS_USER: 'u' };
  t.deepEqual(tlsFromEnv(env), { tlsCa: '/ca.pem', tlsCert: '/c.pem', tlsKey: '/k.pem' });
  t.like(authFromEnv(env), { user: 'u', tlsCa: '/ca.pem', tlsCert: '/c.pem', tlsKey: '/k.pem' });
  t.deepEqual(tlsFromEnv({ HR1_NATS_TLS_CA: '' }), { tlsCa: undefined, tlsCert: undefined, tlsKey: undefined });
  t.deepEqual(resolveInitOptions({ address: 'tls://h:1', tlsCa: '/ca.pem', tlsCert: '/c.pem', tlsKey: '/k.pem' }).auth, { tlsCa: '/ca.pem', tlsCert: '/c.pem', tlsKey: '/k.pem' });
  t.like(authOf({ tlsCa: '/ca.pem', user: 'u' }), { tlsCa: '/ca.pem', user: 'u', tlsKey: undefined });
});
