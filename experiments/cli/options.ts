import { InvalidArgumentError, type Command } from 'commander';
import { parseDuration } from '../../cluster/duration.ts';

/** `cpu=2,gpu=0` → `{cpu: 2, gpu: 0}`. */
export function parseResources(v: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of v.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([a-z][a-z0-9_]*)=(\d+(?:\.\d+)?)$/.exec(part);
    if (!m) throw new InvalidArgumentError(`"${part}" is not NAME=NUMBER; write e.g. --resources cpu=2,gpu=0`);
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

/** `zone=a,tier=gpu` → `{zone: 'a', tier: 'gpu'}`; repeatable. */
export function parseLabels(v: string, prev: Record<string, string> = {}): Record<string, string> {
  const out = { ...prev };
  for (const part of v.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([A-Za-z0-9_.-]+)=([^,=]*)$/.exec(part);
    if (!m) throw new InvalidArgumentError(`"${part}" is not KEY=VALUE; write e.g. --labels zone=a,tier=gpu`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

export function parsePositiveInt(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive integer, got "${v}"`);
    return n;
  };
}

export function parseDurationOpt(name: string) {
  return (v: string): number => {
    try {
      return parseDuration(/^\d+(\.\d+)?$/.test(v) ? Number(v) : v);
    } catch (e) {
      throw new InvalidArgumentError(`${name}: ${(e as Error).message}`);
    }
  };
}

export function parseAddress(v: string): string {
  for (const a of v.split(',')) {
    if (!/^(nats|tls|ws|wss):\/\/[^\s/]+(:\d+)?\/?$/.test(a.trim()) && !/^[^\s/:]+:\d+$/.test(a.trim())) {
      throw new InvalidArgumentError(`"${a}" is not a NATS address; write nats://host:port (several separated by commas)`);
    }
  }
  return v;
}

/**
 * The connection options every cluster command takes. `defaultInProcess`: without `--address` the
 * command runs on the in-process transport (its help says so) instead of a private nats-server.
 */
export function addClusterOptions(cmd: Command, { address = true, defaultInProcess = false } = {}): Command {
  if (address) {
    cmd.option(
      '--address <url>',
      defaultInProcess ? 'NATS address of an existing cluster (nats://host:port); without it the command runs in-process' : 'NATS address of an existing cluster (nats://host:port); without it a private one is started',
      parseAddress,
    );
  }
  return cmd
    .option('--cluster <name>', 'cluster namespace (subjects hr1.<name>.…)', 'default')
    .option('--user <user>', 'NATS user (or HR1_NATS_USER)')
    .option('--pass <password>', 'NATS password (or HR1_NATS_PASS)')
    .option('--token <token>', 'NATS token (or HR1_NATS_TOKEN)')
    .option('--creds <file>', 'NATS .creds file (or HR1_NATS_CREDS)');
}

export { authOf, type ClusterCliOptions } from '../commands/runtime.ts';
