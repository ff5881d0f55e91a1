import test from 'ava';
import { behaviourSuite } from '../behaviour/suite.ts';
import { inProcessTransport } from '../behaviour/harness.ts';

// one bus per test keeps tests apart; every message is still encoded and validated
behaviourSuite(test, () => inProcessTransport());
