import test from 'ava';
import { behaviourSuite } from '../behaviour/suite.ts';
import { natsTransport, type Transport } from '../behaviour/harness.ts';

let transport: Transport;
test.before(async () => {
  transport = await natsTransport();
});
test.after.always(async () => {
  await transport?.close();
});

// the same behaviour suite as test/unit/cluster-inproc.test.ts, over a real nats-server
behaviourSuite(test, () => transport);
