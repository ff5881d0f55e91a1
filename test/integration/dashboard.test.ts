import test from 'ava';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { init } from '../../cluster/init.ts';
import { runExpMain } from '../../experiments/exp/index.ts';
import { resolveTrainConfig, trainEngineer } from '../../experiments/train.ts';
import { Counter } from '../fixtures/actors.ts';
import { hr1, startNode, stopAll, waitFor, ROOT, type Proc } from './processes.ts';

// page functions run in the browser; this project's types have no DOM lib
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any;
type El = { textContent: string | null; innerText: string; getAttribute(n: string): string | null; querySelectorAll(s: string): El[]; complete: boolean; naturalWidth: number; value: string };

/** the system's Chromium (Debian's package; bin/setup.sh installs it), or HR1_CHROMIUM */
function chromium(): string | null {
  if (process.env.HR1_CHROMIUM) return process.env.HR1_CHROMIUM;
  for (const c of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      return execFileSync('which', [c], { encoding: 'utf8' }).trim() || null;
    } catch {
      // next
    }
  }
  return null;
}

const root = mkdtempSync(join(tmpdir(), 'hr1-dash-'));
const runs = join(root, 'runs');
// screenshots stay after the test (look at them): .hr1/ is ignored by git
const shots = join(ROOT, '.hr1', 'screenshots', 'dashboard');

test.after.always(() => rmSync(root, { recursive: true, force: true }));

test.serial('dashboard - a real browser shows the cluster, the runs with tables, plots and curves, and the episode viewer', async (t) => {
  t.timeout(600_000); // a node process, two small runs (one trains with torch) and a browser on a busy 2-core machine
  const exe = chromium();
  if (!exe) return t.fail('no Chromium found: run bin/setup.sh (it installs Debian\'s chromium), or set HR1_CHROMIUM to a Chrome binary');
  mkdirSync(shots, { recursive: true });
  // two real run folders: a small exp main on SIMULATED targets, and a small engineer training run
  const rt = await init({ inProcess: true });
  try {
    await runExpMain({ inProcess: true, progress: 'silent', test: { tasks: 6, seeds: [0] }, train: { packets: 2, batchSize: 10 }, out: join(runs, 'exp-small') }, { stdout: () => {}, cluster: rt.cluster });
    const cfg = resolveTrainConfig(undefined, { model: { dModel: 32, nLayers: 1, nHeads: 2, maxLen: 768 }, env: 'alfworld', target: 'sim/llama-3b', batchSize: 6, sft: { batches: 1, k: 2, epochs: 2, batchSize: 8 }, grpo: { iterations: 2, k: 2 }, out: join(runs, 'engineers', 'h1', 'alfworld') }); // where exp main keeps the engineers it trains: found below the top level
    await trainEngineer(rt.cluster, cfg, () => {});
  } finally {
    await rt.shutdown();
  }

  const server = await NatsServer.start();
  const procs: Proc[] = [];
  const bus = await NatsBus.connect({ address: server.url });
  const cluster = new Cluster(bus, { cluster: 'dash' });
  let browser: Browser | null = null;
  try {
    procs.push(await startNode(server.url, 'dash', ['--node-id', 'dash-n0', '--labels', 'zone=a']));
    await cluster.waitForNodes(1, 30_000);
    const counter = await cluster.spawn(Counter.options({ name: 'visible-counter' }), { start: 1 });
    for (let i = 0; i < 5; i++) await counter.add(1);
    const dash = hr1(['dashboard', '--address', server.url, '--cluster', 'dash', '--runs', runs, '--port', '0']);
    procs.push(dash);
    const url = (await waitFor(dash, /http:\/\/127\.0\.0\.1:\d+\//, 60_000)).trim();
    browser = await puppeteer.launch({ executablePath: exe, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    const page: Page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    const text = (sel: string) => page.$eval(sel, (e) => (e as unknown as El).innerText);

    // cluster: the node with its label, the actor with its node, restarts, mailbox and calls
    await page.goto(`${url}#/cluster`);
    await page.waitForFunction(() => document.querySelector('table.actors')?.textContent?.includes('visible-counter'), { timeout: 30_000 });
    const nodes = await text('table.nodes');
    t.regex(nodes, /dash-n0/);
    t.regex(nodes, /zone=a/);
    const actorRow = await page.$$eval('table.actors tbody tr', (rows) => rows.map((r) => [...(r as unknown as El).querySelectorAll('td')].map((c) => c.textContent ?? '')));
    const row = actorRow.find((r) => r.includes('visible-counter'));
    t.truthy(row, JSON.stringify(actorRow));
    t.is(row![1], 'Counter');
    t.is(row![3], 'dash-n0');
    t.is(row![4], '0', 'no restarts');
    t.regex(row![6]!, /^\d+$/, 'calls counted');
    t.true(Number(row![6]) >= 5);
    // a warning the actor logs on its node reaches the page through the node's forwarding
    await counter.warn('disk almost full on the test node');
    await page.waitForFunction(() => document.querySelector('table.logs')?.textContent?.includes('disk almost full'), { timeout: 30_000 });
    t.regex(await text('table.logs'), /warn[\s\S]*dash-n0[\s\S]*visible-counter/);
    await page.screenshot({ path: join(shots, 'cluster.png'), fullPage: true });

    // runs: both folders, with their kinds
    await page.goto(`${url}#/runs`);
    await page.waitForSelector('table.runs tbody tr');
    const runsText = await text('table.runs');
    t.regex(runsText, /exp-small/);
    t.regex(runsText, /engineers\/h1\/alfworld/);
    t.regex(runsText, /\bexp\b/);
    t.regex(runsText, /\btrain\b/);
    await page.screenshot({ path: join(shots, 'runs.png'), fullPage: true });

    // an exp run: its tables and its plots (the images load)
    await page.goto(`${url}#/run/exp-small`);
    await page.waitForSelector('#summary table');
    await page.waitForSelector('#plots img');
    await page.waitForFunction(() => [...(document.querySelectorAll('#plots img') as El[])].every((i) => i.complete && i.naturalWidth > 0), { timeout: 30_000 });
    t.regex(await text('#summary'), /vanilla/);
    t.true((await page.$$('#plots img')).length >= 2);
    await page.screenshot({ path: join(shots, 'run-exp.png'), fullPage: true });

    // a training run: curves drawn by uPlot (a canvas per chart), SFT loss among them
    await page.goto(`${url}#/run/${encodeURIComponent('engineers/h1/alfworld')}`);
    await page.waitForSelector('#curves .curve canvas', { timeout: 30_000 });
    const titles = await page.$$eval('#curves .curve', (cs) => cs.map((c) => c.getAttribute('data-title')));
    t.true(titles.includes('SFT loss'), JSON.stringify(titles));
    t.true(titles.some((x) => x?.includes('meanDelta')), JSON.stringify(titles));
    await page.screenshot({ path: join(shots, 'run-train.png'), fullPage: true });

    // the episode viewer: a patched episode beside the same episode without the patch
    await page.goto(`${url}#/episodes/exp-small?method=prompted-editor`);
    await page.waitForSelector('#episode table.steps.patched tbody tr', { timeout: 30_000 });
    await page.waitForSelector('#episode table.steps.vanilla tbody tr');
    const method = await page.$eval('select[name=method]', (s) => (s as unknown as El).value);
    t.not(method, 'vanilla');
    t.true((await text('#episode pre.patch')).length > 10, 'the patch in canonical form');
    // when the two part, the first differing step is marked on both sides
    const diverge = await page.$$eval('#episode tr.diverge', (rs) => rs.map((r) => r.getAttribute('data-step')));
    const summary = await text('#episode');
    if (/never part/.test(summary)) t.is(diverge.length, 0);
    else {
      t.true(diverge.length >= 1 && diverge.length <= 2, JSON.stringify(diverge));
      t.is(new Set(diverge).size, 1);
    }
    await page.screenshot({ path: join(shots, 'episode.png'), fullPage: true });

    // a run that does not exist: an error on the page, not a blank one
    await page.goto(`${url}#/run/no-such-run`);
    await page.waitForFunction(() => document.querySelector('main')?.textContent?.includes('no run folder'), { timeout: 15_000 });
    t.deepEqual(errors.filter((e) => !/404/.test(e)), [], 'no script errors in the page');
    t.log(`screenshots in ${shots}`);
    t.true(existsSync(join(shots, 'episode.png')));
    t.true(readFileSync(join(shots, 'cluster.png')).length > 5000);
  } finally {
    await browser?.close();
    await stopAll(procs);
    await cluster.close();
    await bus.close();
    await server.stop();
  }
});

test.serial('dashboard - a busy port and a missing runs folder are clear errors, not stack traces', async (t) => {
  t.timeout(120_000);
  const a = hr1(['dashboard', '--runs', runs, '--port', '0']);
  try {
    const url = (await waitFor(a, /http:\/\/127\.0\.0\.1:\d+\//, 60_000)).trim();
    const port = new URL(url).port;
    const b = hr1(['dashboard', '--runs', runs, '--port', port]);
    const code = await b.exited;
    t.not(code, 0);
    t.regex(b.out(), /port \d+ is in use; pick another with --port/);
    t.notRegex(b.out(), /\n\s+at /, 'no stack trace');
    // the API answers a bad episode query with a message that names what is missing
    const r = await fetch(`${url}api/runs/exp-small/episode?method=vanilla`);
    t.is(r.status, 400);
    t.regex(((await r.json()) as { error: string }).error, /episode needs env=/);
    // a name that climbs out of the runs folder, or names a folder that is no run, reaches nothing
    for (const bad of ['..%2F..%2Fetc', 'exp-small%2F..%2F..', '%2Ftmp', 'exp-small%2Fplots']) t.is((await fetch(`${url}api/runs/${bad}`)).status, 404, bad);
    t.is((await fetch(`${url}files/..%2F..%2Fetc/passwd`)).status, 404);
    t.is((await fetch(`${url}api/runs/exp-small`)).status, 200);
  } finally {
    await stopAll([a]);
  }
  // a runs folder that is not there yet: said once, and the page lists none until runs appear
  const c = hr1(['dashboard', '--runs', join(root, 'nowhere'), '--port', '0']);
  try {
    const url = (await waitFor(c, /http:\/\/127\.0\.0\.1:\d+\//, 60_000)).trim();
    await waitFor(c, /no folder .*nowhere yet/);
    const r = (await (await fetch(`${url}api/runs`)).json()) as { runs: unknown[] };
    t.deepEqual(r.runs, []);
  } finally {
    await stopAll([c]);
  }
});
