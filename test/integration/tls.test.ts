/**
 * TLS to a real nats-server (`tls { cert_file, key_file, ca_file, verify: true }`) with a CA
 * made here by openssl: a node and a client connect with --tls-ca/--tls-cert/--tls-key (or the
 * HR1_NATS_TLS_* variables) and a call works; without the CA, with the wrong one, without a
 * client certificate, or with a file that cannot be read, the connection is refused with a
 * typed ConnectionError naming the option; a tls:// address never connects in plain text.
 */
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { ConnectionError } from '../../cluster/errors.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { Counter } from '../fixtures/actors.ts';
import { hr1, startNode, stopAll, type Proc } from './processes.ts';
import { hasOpenssl, makeTestPki, tlsServerConfig, type TestPki } from './security-helpers.ts';

const STACK = /^\s+at /m;
const NO_TLS_ENV = { HR1_NATS_TLS_CA: '', HR1_NATS_TLS_CERT: '', HR1_NATS_TLS_KEY: '' };

let pki: TestPki;
let server: NatsServer;
let plain: NatsServer;
test.before(async () => {
  if (!hasOpenssl) return;
  pki = makeTestPki();
  server = await NatsServer.start({ jetstream: false, config: tlsServerConfig(pki, true) });
  plain = await NatsServer.start({ jetstream: false });
});
test.after.always(async () => {
  await server?.dispose();
  await plain?.dispose();
  if (pki) rmSync(pki.dir, { recursive: true, force: true });
});

const tlsFlags = () => ['--tls-ca', pki.ca, '--tls-cert', pki.clientCert, '--tls-key', pki.clientKey];

test.serial('tls - a node (flags) and a client connect over tls:// with the CA and client certificates; calls, status (env variables) and eval work', async (t) => {
  if (!hasOpenssl) return t.pass('openssl not installed');
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.tlsUrl, tlsCa: pki.ca, tlsCert: pki.clientCert, tlsKey: pki.clientKey });
  const cluster = new Cluster(bus, { cluster: 'tls' });
  try {
    procs.push(await startNode(server.tlsUrl, 'tls', ['--node-id', 'tls-n0', ...tlsFlags()], NO_TLS_ENV));
    await cluster.waitForNodes(1, 15_000);
    const c = await cluster.spawn(Counter);
    t.is(await c.add(2), 2);
    t.is((await c.whoami(null)).nodeId, 'tls-n0', 'the call ran on the TLS node');
    // the variables instead of flags
    const st = hr1(['status', '--address', server.tlsUrl, '--cluster', 'tls', '--json'], { HR1_NATS_TLS_CA: pki.ca, HR1_NATS_TLS_CERT: pki.clientCert, HR1_NATS_TLS_KEY: pki.clientKey });
    procs.push(st);
    t.is(await st.exited, 0, st.out());
    t.deepEqual((JSON.parse(st.out()) as { nodes: { nodeId: string }[] }).nodes.map((n) => n.nodeId), ['tls-n0']);
    // a driver command through init(): hr1 eval over TLS on the TLS node
    const ev = hr1(['eval', '--env', 'alfworld', '--target', 'sim/qwen-3b', '--tasks', '2', '--no-cache', '--no-progress', '--json', '--address', server.tlsUrl, '--cluster', 'tls', ...tlsFlags()], NO_TLS_ENV);
    procs.push(ev);
    t.is(await ev.exited, 0, ev.out());
    t.regex(ev.out(), /"episodes": 2/);
  } finally {
    await cluster.close();
    await bus.close();
    await stopAll(procs);
  }
});

test.serial('tls - hr1 exp takes the --tls-* flags too (its config has no TLS fields: they reach init() through HR1_NATS_TLS_*)', async (t) => {
  if (!hasOpenssl) return t.pass('openssl not installed');
  const procs: Proc[] = [];
  const out = mkdtempSync(join(tmpdir(), 'hr1-tls-exp-'));
  try {
    procs.push(await startNode(server.tlsUrl, 'tlsexp', ['--node-id', 'tls-exp-n0', ...tlsFlags()], NO_TLS_ENV));
    const exp = hr1(['exp', 'main', '--envs', 'alfworld', '--methods', 'vanilla', '--out', join(out, 'run'), '--address', server.tlsUrl, '--cluster', 'tlsexp', ...tlsFlags()], NO_TLS_ENV);
    procs.push(exp);
    t.is(await exp.exited, 0, exp.out());
    t.regex(exp.out(), /connected to NATS at tls:\/\/127\.0\.0\.1:\d+/);
    t.regex(exp.out(), /vanilla/);
    const bad = hr1(['exp', 'main', '--envs', 'alfworld', '--methods', 'vanilla', '--out', join(out, 'bad'), '--address', server.tlsUrl, '--tls-ca', '/nonexistent/ca.pem'], NO_TLS_ENV);
    procs.push(bad);
    t.is(await bad.exited, 2);
    t.regex(bad.out(), /\[TLS_CONFIG\]: --tls-ca \/nonexistent\/ca\.pem: cannot read it/);
  } finally {
    await stopAll(procs);
    rmSync(out, { recursive: true, force: true });
  }
});

test.serial('tls - without the CA, with the wrong CA, without a client certificate or with an unreadable file the connection is refused with a typed error naming the option', async (t) => {
  if (!hasOpenssl) return t.pass('openssl not installed');
  // tls:// without --tls-ca: refused before connecting, naming the option
  const noCa = hr1(['node', '--address', server.tlsUrl, '--module', 'test/fixtures/actors.ts'], NO_TLS_ENV);
  t.is(await noCa.exited, 2);
  t.regex(noCa.out(), /^hr1: ConnectionError \[TLS_CONFIG\]: the address tls:\/\/127\.0\.0\.1:\d+ asks for TLS but no CA.*--tls-ca \(or HR1_NATS_TLS_CA\)/m);
  t.notRegex(noCa.out(), STACK);
  await t.throwsAsync(NatsBus.connect({ address: server.tlsUrl }), { instanceOf: ConnectionError, message: /--tls-ca/ });

  // nats:// to the TLS server without any TLS option: nats.js upgrades, the certificate does not verify
  const plainAddr = await t.throwsAsync(NatsBus.connect({ address: server.url }), { instanceOf: ConnectionError });
  t.is(plainAddr.code, 'TLS_REFUSED');
  t.regex(plainAddr.message, /cannot verify.*requires TLS: pass the CA .* --tls-ca/);

  // the wrong CA
  const wrong = await t.throwsAsync(NatsBus.connect({ address: server.tlsUrl, tlsCa: pki.otherCa, tlsCert: pki.clientCert, tlsKey: pki.clientKey }), { instanceOf: ConnectionError });
  t.is(wrong.code, 'TLS_REFUSED');
  t.regex(wrong.message, /cannot verify.*--tls-ca/);

  // the right CA but no client certificate: the server (verify: true) drops the connection
  const noCert = await t.throwsAsync(NatsBus.connect({ address: server.tlsUrl, tlsCa: pki.ca }), { instanceOf: ConnectionError });
  t.is(noCert.code, 'TLS_REFUSED');
  t.regex(noCert.message, /--tls-cert and --tls-key/);

  // files that cannot be used: named by their option, from the CLI, no stack
  const cases: [string[], RegExp][] = [
    [['--tls-ca', '/nonexistent/ca.pem'], /\[TLS_CONFIG\]: --tls-ca \/nonexistent\/ca\.pem: cannot read it/],
    [['--tls-ca', pki.ca, '--tls-cert', pki.clientCert], /\[TLS_CONFIG\]: --tls-cert was given without --tls-key/],
    [['--tls-ca', pki.clientKey], /\[TLS_CONFIG\]: --tls-ca .*client\.key: not a PEM certificate/],
    [['--tls-ca', pki.ca, '--tls-cert', pki.clientCert, '--tls-key', pki.serverKey], /\[TLS_CONFIG\]: --tls-key .*server\.key is not the key of --tls-cert/],
  ];
  for (const [flags, re] of cases) {
    const p = hr1(['status', '--address', server.tlsUrl, ...flags], NO_TLS_ENV);
    t.is(await p.exited, 2, flags.join(' '));
    t.regex(p.out(), re);
    t.notRegex(p.out(), STACK);
  }
});

test.serial('tls - a tls:// address never connects in plain text to a server without TLS', async (t) => {
  if (!hasOpenssl) return t.pass('openssl not installed');
  const e = await t.throwsAsync(NatsBus.connect({ address: plain.tlsUrl, tlsCa: pki.ca }), { instanceOf: ConnectionError });
  t.is(e.code, 'TLS_REFUSED');
  t.regex(e.message, /offers no TLS.*never falls back to plain text/);
  // TLS files with a nats:// address ask for TLS too
  await t.throwsAsync(NatsBus.connect({ address: plain.url, tlsCa: pki.ca }), { instanceOf: ConnectionError, code: 'TLS_REFUSED' });
  const p = hr1(['status', '--address', plain.tlsUrl, '--tls-ca', pki.ca], NO_TLS_ENV);
  t.is(await p.exited, 2);
  t.regex(p.out(), /^hr1: ConnectionError \[TLS_REFUSED\]: NATS server at tls:\/\/127\.0\.0\.1:\d+ offers no TLS/m);
  t.notRegex(p.out(), STACK);
});
