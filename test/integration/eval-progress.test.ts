/**
 * What `hr1 eval` tells while and after it runs, as a real child process with stderr piped (no
 * TTY): periodic progress lines, and the endpoint client's counters for an openai: target served
 * by the project's own OpenAI-compatible server (hr1 serve's sim backend).
 */
import { spawn } from 'node:child_process';
import test from 'ava';
import { HR1, ROOT } from './processes.ts';
import { serveLocal } from '../../policies/targets/serve-local.ts';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `hr1 …` with stdout and stderr kept apart (both pipes: stderr is not a TTY). */
function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const child = spawn(process.execPath, [HR1, ...args], { cwd: ROOT, env: { ...process.env, HR1_NATS_USER: '', HR1_NATS_PASS: '', HR1_NATS_TOKEN: '', HR1_NATS_CREDS: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

const num = (s: string): number => Number(s.replace(/,/g, ''));

test('eval progress - without a TTY, eval prints periodic lines with a rate and an ETA, then a final line, all on stderr', async (t) => {
  // an interval of 1 ms: every chunk that finishes is worth a line
  const r = await run(['eval', '--env', 'alfworld', '--target', 'sim/qwen-3b', '--tasks', '40', '--seeds', '1-5', '--no-cache', '--in-process'], { HR1_PROGRESS_INTERVAL: '1' });
  t.is(r.code, 0, r.stderr);
  const lines = r.stderr.split('\n');
  const periodic = lines.map((l, i) => ({ l, i })).filter(({ l }) => /^eval: [\d,]+\/200 episodes \(\d{1,2}%\), \d+(\.\d)?\/(s|min), ETA (\d+ (s|min|h)|\?)/.test(l));
  const final = lines.findIndex((l) => /^eval: 200\/200 episodes \(100%\), \d+(\.\d)?\/(s|min), took \d+ (s|min)/.test(l));
  t.true(periodic.length >= 1, `no periodic progress line in:\n${r.stderr}`);
  t.true(final > 0, `no final progress line in:\n${r.stderr}`);
  t.true(periodic.every(({ i }) => i < final), 'periodic lines come before the final one');
  // counts only go up
  const counts = periodic.map(({ l }) => num(/^eval: ([\d,]+)\//.exec(l)![1]!));
  t.deepEqual(counts, [...counts].sort((a, b) => a - b));
  t.true(counts.every((c) => c < 200));
  // stdout has the results, not the progress
  t.notRegex(r.stdout, /^eval: /m);
  t.regex(r.stdout, /alfworld\s+sim\/qwen-3b/);
});

test('eval progress - a bad HR1_PROGRESS_INTERVAL fails before anything runs, naming the variable', async (t) => {
  const r = await run(['eval', '--env', 'alfworld', '--target', 'sim/qwen-3b', '--tasks', '1', '--no-cache', '--in-process'], { HR1_PROGRESS_INTERVAL: 'soon' });
  t.not(r.code, 0);
  t.regex(r.stderr, /HR1_PROGRESS_INTERVAL: "soon" is not a positive duration/);
  t.notRegex(r.stderr, /hr1 eval: alfworld/);
});

test.serial('eval client stats - an endpoint target prints its requests, tokens and latencies; --json carries client_stats summed over replicas', async (t) => {
  const srv = await serveLocal('sim/llama-3b', { env: 'alfworld' });
  t.teardown(() => srv.close());
  const target = `openai:${srv.url}#sim/llama-3b`;
  const args = ['eval', '--env', 'alfworld', '--target', target, '--seeds', '1', '--no-cache', '--in-process'];

  const text = await run([...args, '--tasks', '3']);
  t.is(text.code, 0, text.stderr);
  const m = /^endpoint sim\/llama-3b: ([\d,]+) requests, ([\d,]+) tokens \(([\d,]+) prompt \+ ([\d,]+) completion\), (\d+) retries, (\d+) timeouts, (\d+) failures, latency p50 ([\d.,]+) ms p99 ([\d.,]+) ms$/m.exec(text.stdout);
  t.truthy(m, `no endpoint stats line in:\n${text.stdout}`);
  const [requests, tokens, prompt, completion, retries, timeouts, failures, p50, p99] = m!.slice(1).map(num);
  t.true(requests! > 0);
  t.true(tokens! > 0);
  t.is(tokens, prompt! + completion!);
  t.deepEqual([retries, timeouts, failures], [0, 0, 0]);
  t.true(p50! <= p99!, `p50 ${p50} ≤ p99 ${p99}`);
  const servedBefore = srv.stats.completions;
  t.is(servedBefore, requests!, 'every request the client counted reached the server');

  // two replicas (the in-process bus hands chunks round robin): the counters add up over both
  const json = await run([...args, '--tasks', '20', '--replicas', '2', '--json']);
  t.is(json.code, 0, json.stderr);
  const out = JSON.parse(json.stdout) as { client_stats?: { target: string; model: string; replicas: number; requests: number; calls: number; totalTokens: number; promptTokens: number; completionTokens: number; failures: number; latencyMs: { count: number; p50: number; p99: number } } };
  const cs = out.client_stats;
  t.truthy(cs, 'client_stats in the JSON');
  t.like(cs, { target, model: 'sim/llama-3b', replicas: 2, failures: 0 });
  t.is(cs!.requests, srv.stats.completions - servedBefore, 'requests summed over the replicas = what the server answered');
  t.true(cs!.totalTokens > 0);
  t.is(cs!.totalTokens, cs!.promptTokens + cs!.completionTokens);
  t.is(cs!.latencyMs.count, cs!.requests);
  t.true(cs!.latencyMs.p50 <= cs!.latencyMs.p99);
});

test('eval client stats - a sim target has no endpoint, so no stats line and no client_stats', async (t) => {
  const r = await run(['eval', '--env', 'alfworld', '--target', 'sim/qwen-3b', '--tasks', '2', '--no-cache', '--in-process', '--json']);
  t.is(r.code, 0, r.stderr);
  t.false('client_stats' in (JSON.parse(r.stdout) as object));
});
