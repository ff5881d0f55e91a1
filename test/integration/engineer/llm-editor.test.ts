/**
 * The prompted LLM editor (`llm-editor`): the real OpenAIClient/OpenAIEngineer against the
 * project's own OpenAI-compatible server (startServer) with a scripted backend that answers by
 * the request's seed and turn: a good patch, garbage that the retry repairs, a schema-invalid
 * patch that stays invalid, a hostile patch (a hook that loops forever, touches require/process,
 * throws). Then the method end to end in `hr1 exp main` on a SIMULATED target.
 */
import test from 'ava';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { init } from '../../../cluster/init.ts';
import { checkCandidate } from '../../../drivers/index.ts';
import { ExpError, RUN_FILES, runExpMain, type EvalRow, type ExpMainInput } from '../../../experiments/exp/index.ts';
import { runExpCommand } from '../../../experiments/commands/exp.ts';
import { LLM_EDITOR_MISSING } from '../../../experiments/runner/llm-editor.ts';
import { ENGINEER_IS_LLM } from '../../../experiments/runner/engineer-methods.ts';
import { extractPacket } from '../../../policies/engineer/packet.ts';
import { OpenAIEngineer, repairPrompt, type LlmCandidate } from '../../../policies/engineer/openai.ts';
import { startServer, type BackendRequest, type RunningServer, type ServeBackend } from '../../../policies/targets/serve.ts';
import { type Patch } from '../../../harness/index.ts';

const root = mkdtempSync(join(tmpdir(), 'hr1-llm-editor-'));
test.after.always(() => rmSync(root, { recursive: true, force: true }));

const GOOD = { skills: ['Do not repeat the same action.'], rules: [{ hook: 'preAction', when: { pred: 'proposedRepeatsLast' }, effect: { type: 'block_and_prompt', message: 'Try something different.' } }] };
const GOOD2 = { description: 'check the answer format', skills: ['Before answering, check that the answer has the format the task asks for.'] };
const SCHEMA_BAD = { rules: [{ hook: 'preAction', effect: { type: 'explode' } }] };
const HOSTILE = {
  code: [
    { hook: 'preAction', source: 'function hook(ctx, nb) { while (true) {} }' },
    { hook: 'preDecision', source: "function hook(ctx, nb) { require('fs'); process.exit(1); }" },
    { hook: 'postFeedback', source: "function hook(ctx, nb) { throw new Error('boom'); }" },
  ],
};

/**
 * What candidate `seed - base` answers, on its first turn and on the retry: 0 good; 1 garbage,
 * then good; 2 schema-invalid twice; 3 hostile twice; 4 good; 5 schema-invalid, then good.
 */
function answer(offset: number, retry: boolean): string {
  switch (offset) {
    case 0:
      return `Here is my patch:\n\`\`\`json\n${JSON.stringify(GOOD)}\n\`\`\``;
    case 1:
      return retry ? JSON.stringify(GOOD2) : 'I would rather explain the failures in prose.';
    case 2:
      return JSON.stringify(SCHEMA_BAD);
    case 3:
      return JSON.stringify(HOSTILE);
    case 5:
      return retry ? JSON.stringify(GOOD2) : JSON.stringify(SCHEMA_BAD);
    default:
      return JSON.stringify(GOOD);
  }
}

/** A backend that answers by seed and turn after a short delay, counting the requests it has in flight. */
function editorBackend(base: number, o: { delayMs?: number; answer?: (offset: number, retry: boolean, req: BackendRequest) => string } = {}) {
  const requests: BackendRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const fn: ServeBackend = async (req) => {
    requests.push(req);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      await new Promise((r) => setTimeout(r, o.delayMs ?? 40));
      const retry = req.messages.length > 2;
      return { content: (o.answer ?? answer)((req.seed ?? 0) - base, retry, req) };
    } finally {
      inFlight--;
    }
  };
  // a getter (Object.assign would copy its value once)
  return Object.defineProperty(Object.assign(fn, { requests }), 'maxInFlight', { get: () => maxInFlight }) as ServeBackend & { requests: BackendRequest[]; readonly maxInFlight: number };
}

async function serve(t: { teardown(fn: () => Promise<void>): void }, backend: ServeBackend): Promise<RunningServer> {
  const srv = await startServer({ backend });
  t.teardown(() => srv.close());
  return srv;
}

const fullCheck = async (p: Patch) => {
  const r = await checkCandidate(p, 'full');
  return r.ok ? [] : r.issues;
};
const EXTRA = { chat_template_kwargs: { enable_thinking: false } };
const packet = () => extractPacket([]);
const retryOf = (b: { requests: BackendRequest[] }, seed: number) => b.requests.find((r) => r.seed === seed && r.messages.length > 2);

test('llm-editor engineer - K candidates in parallel (never more than concurrency), sampling settings on the wire, one retry quoting the issues', async (t) => {
  const backend = editorBackend(100);
  const srv = await serve(t, backend);
  const eng = new OpenAIEngineer(srv.url, 'editor', { temperature: 0.3, topP: 0.9, maxTokens: 777, extraBody: EXTRA, concurrency: 3, client: { maxRetries: 0 } });
  const c = await eng.propose(packet(), { k: 6, seed: 100, retries: 1, check: fullCheck });

  // 6 first turns and 4 retries; up to 3 at once and never more
  t.is(backend.requests.length, 10);
  t.is(backend.maxInFlight, 3);
  t.is(srv.stats.maxInFlight, 3);
  t.deepEqual([...new Set(backend.requests.map((r) => r.seed))].sort(), [100, 101, 102, 103, 104, 105]);
  for (const r of backend.requests) {
    t.is(r.model, 'editor');
    t.is(r.temperature, 0.3);
    t.is(r.top_p, 0.9);
    t.is(r.max_tokens, 777);
    t.deepEqual(r.extra, EXTRA);
  }

  // in candidate order, whatever order the replies came in
  const ok = (x: LlmCandidate) => x.ok;
  t.deepEqual(c.map(ok), [true, true, false, false, true, true]);
  t.deepEqual(c.map((x) => x.seed), [100, 101, 102, 103, 104, 105]);
  t.deepEqual(c.map((x) => x.attempts), [1, 2, 2, 2, 1, 2]);
  t.is(c[1]!.firstIssues?.[0]?.code, 'PATCH_JSON');

  // the retry: the same conversation, the invalid reply as the assistant turn, then the validator's issues quoted
  const r1 = retryOf(backend, 101)!;
  t.is(r1.messages.length, 4);
  t.is(r1.messages[2]!.role, 'assistant');
  t.is(r1.messages[2]!.content, 'I would rather explain the failures in prose.');
  t.is(r1.messages[3]!.role, 'user');
  t.regex(String(r1.messages[3]!.content), /^Your answer is not a valid patch\. The patch validator reported:\n- PATCH_JSON at \(patch\): the reply is not a JSON object/);
  t.regex(String(r1.messages[3]!.content), /corrected patch: ONE JSON object/);
  const r2 = String(retryOf(backend, 102)!.messages[3]!.content);
  t.true(r2.includes('- PATCH_SCHEMA at rules[0].effect.type [preAction]: an effect is {type, ...}'), r2);
  t.is(r2, repairPrompt(c[2]!.ok ? [] : c[2]!.firstIssues!));

  // still invalid after the retry: an invalid candidate with the second reply's issues, not dropped
  t.false(c[2]!.ok);
  if (!c[2]!.ok) t.is(c[2]!.issues[0]!.code, 'PATCH_SCHEMA');

  // the hostile patch: refused by validation (compile + smoke in the sandbox), its faults quoted on the retry
  t.false(c[3]!.ok);
  if (!c[3]!.ok) {
    const text = c[3]!.issues.map((i) => `${i.code} ${i.path} ${i.message}`).join('\n');
    t.regex(text, /PATCH_SMOKE code\[0\] .*timed out/);
    t.regex(text, /PATCH_SMOKE code\[1\] .*'require' is not defined/);
    t.regex(text, /PATCH_SMOKE code\[2\] .*boom/);
  }
  t.regex(String(retryOf(backend, 103)!.messages[3]!.content), /PATCH_SMOKE at code\[0\] \[preAction\]: in the smoke episode it timed out/);
  if (c[5]!.ok) t.deepEqual(c[5]!.patch, (await checkCandidate(GOOD2, 'schema') as { parsed: { patch: Patch } }).parsed.patch);

  // concurrency 1: one at a time, in seed order; without retries an invalid reply is final
  const seq = editorBackend(200, { delayMs: 5 });
  const srv2 = await serve(t, seq);
  const one = await new OpenAIEngineer(srv2.url, 'editor', { concurrency: 1, client: { maxRetries: 0 } }).propose(packet(), { k: 3, seed: 200 });
  t.is(seq.maxInFlight, 1);
  t.deepEqual(seq.requests.map((r) => r.seed), [200, 201, 202]);
  t.deepEqual(one.map(ok), [true, false, false]);
  // topP and extraBody unset: not sent
  t.is(seq.requests[0]!.top_p, undefined);
  t.is(seq.requests[0]!.extra, undefined);
});

test('llm-editor engineer - an HTTP failure after the client retries throws (infrastructure), once the calls in flight have ended', async (t) => {
  const srv = await serve(t, async () => {
    await new Promise((r) => setTimeout(r, 10));
    throw new Error('GPU fell off the bus');
  });
  const eng = new OpenAIEngineer(srv.url, 'editor', { concurrency: 2, client: { maxRetries: 1, backoffBaseMs: 1, backoffCapMs: 2 } });
  const e = await t.throwsAsync(eng.propose(packet(), { k: 4, seed: 0, retries: 1 }));
  t.is((e as { code?: string }).code, 'OPENAI_RETRIES_EXHAUSTED');
  t.regex(e!.message, /HTTP 500.*GPU fell off the bus/);
  t.is(srv.stats.inFlight, 0);
});

const SMALL: ExpMainInput = { inProcess: true, progress: 'silent', envs: ['dbbench'], test: { tasks: 8, seeds: [0] }, train: { packets: 1, batchSize: 10 } };
const quiet = { stdout: () => {} };
const rowsOf = (dir: string) => readFileSync(join(dir, RUN_FILES.results), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as EvalRow);

test('llm-editor - options: a typed ExpError without an openai: engineer, bad settings name their path, before anything runs', async (t) => {
  const out = join(root, 'never');
  for (const engineer of [undefined, '/some/train/run']) {
    const e = (await t.throwsAsync(runExpMain({ ...SMALL, methods: ['vanilla', 'llm-editor'], ...(engineer ? { engineer } : {}), out }, quiet))) as ExpError;
    t.true(e instanceof ExpError);
    t.is(e.code, 'EXP_CONFIG');
    t.is(e.path, 'engineer');
    t.regex(e.message, /llm-editor method needs an LLM engineer, --engineer openai:<base-url>#<model>.*e\.g\. --engineer openai:http:\/\/127\.0\.0\.1:8000\/v1#/);
  }
  // the CLI path refuses before training engineers for the engineer rows
  const c = (await t.throwsAsync(runExpCommand('main', { ...SMALL, methods: ['llm-editor', 'engineer-grpo'], out }))) as ExpError;
  t.is(c.code, 'EXP_CONFIG');
  t.is(c.path, 'engineer');
  const bad = async (llmEditor: unknown, path: string, re: RegExp) => {
    const x = (await t.throwsAsync(runExpMain({ ...SMALL, methods: ['llm-editor'], engineer: 'openai:http://127.0.0.1:1/v1#m', llmEditor: llmEditor as never, out }, quiet))) as ExpError;
    t.is(x.code, 'EXP_CONFIG');
    t.is(x.path, path, x.message);
    t.regex(x.message, re);
  };
  await bad({ topP: 1.5 }, 'main.llmEditor.topP', /must be a number in \(0, 1\] or null, got 1\.5/);
  await bad({ concurrency: 0 }, 'main.llmEditor.concurrency', /positive integer/);
  await bad({ extraBody: { model: 'x' } }, 'main.llmEditor.extraBody.model', /may not be set in extraBody/);
  await bad({ extraBody: [1] }, 'main.llmEditor.extraBody', /mapping of request body fields/);
  await bad({ kk: 3 }, 'main.llmEditor', /kk/);
  t.false(existsSync(out));
  // the trained-engineer rows say why they are empty when --engineer names an LLM
  const { methodsMeta } = await import('../../../experiments/exp/common.ts');
  const { resolveExpMain } = await import('../../../experiments/exp/index.ts');
  const o = resolveExpMain({ ...SMALL, methods: ['llm-editor', 'engineer-grpo', 'best-fixed-patch'], engineer: 'openai:http://127.0.0.1:1/v1#m' });
  t.deepEqual(methodsMeta(o.methods, o).meta.map((m) => m.available), [true, ENGINEER_IS_LLM, ENGINEER_IS_LLM]);
  t.true(LLM_EDITOR_MISSING.includes('--engineer openai:'));
});

test.serial('llm-editor - hr1 exp main end to end: best-of-K row, candidates counted, settings in run.json; no valid candidate: an invalid row; HTTP failure: no row', async (t) => {
  const rt = await init({ inProcess: true });
  t.teardown(() => rt.shutdown());
  // the unit's seed is 0 (seed 0, packet 0): candidates 0..3 are good, garbage→good, invalid twice, hostile twice
  const backend = editorBackend(0, { delayMs: 30, answer: (off, retry, req) => (req.temperature === 0.2 ? 'no patch today' : answer(off, retry)) });
  const srv = await serve(t, backend);
  const engineer = `openai:${srv.url}#editor`;
  const llmEditor = { k: 4, concurrency: 2, temperature: 0.3, topP: 0.9, maxTokens: 512, extraBody: EXTRA, maxRetries: 0 };
  const out = join(root, 'main');
  const r = await runExpMain({ ...SMALL, methods: ['vanilla', 'llm-editor'], engineer, llmEditor, out }, { ...quiet, cluster: rt.cluster });
  t.is(r.ran, 2);

  // the candidates really went out in parallel, two at a time, with the settings
  t.is(backend.maxInFlight, 2);
  t.is(backend.requests.length, 4 + 3);
  t.true(backend.requests.every((q) => q.top_p === 0.9 && q.max_tokens === 512 && q.temperature === 0.3 && q.model === 'editor'));
  t.deepEqual(backend.requests[0]!.extra, EXTRA);

  const rows = rowsOf(out);
  const row = rows.find((x) => x.method === 'llm-editor')!;
  t.truthy(row);
  t.is(row.packet, 0);
  t.is(row.invalid, undefined);
  t.is(row.outcomes.length, 8);
  const cands = row.candidates!;
  t.like(cands, { k: 4, valid: 2, invalid: 2, retried: 3, repaired: 1 });
  t.deepEqual(cands.list.map((x) => [x.seed, x.attempts, x.valid]), [[0, 1, true], [1, 2, true], [2, 2, false], [3, 2, false]]);
  t.true(cands.list.slice(0, 2).every((x) => typeof x.delta === 'number'));
  t.true(cands.chosen === 0 || cands.chosen === 1);
  // best-of-K: the kept one has the largest Δ on the packet's own batch (ties: the earlier one)
  const deltas = cands.list.map((x) => x.delta ?? -Infinity);
  t.is(cands.chosen, deltas.indexOf(Math.max(...deltas)));
  t.is(row.patchHash, cands.list[cands.chosen!]!.hash);
  t.true(cands.list[3]!.issues!.some((l) => /^PATCH_SMOKE at code\[0\].*timed out/.test(l)));
  t.true(cands.list[1]!.issues!.some((l) => l.startsWith('first: PATCH_JSON')));

  // run.json: the method's settings, with defaults, and its version (which keys its units)
  const meta = JSON.parse(readFileSync(join(out, RUN_FILES.meta), 'utf8'));
  const m = meta.methods.find((x: { name: string }) => x.name === 'llm-editor');
  t.is(m.available, true);
  t.regex(m.version, /^llm-editor-1\+[0-9a-f]{12}$/);
  t.like(m.settings, { engineer, baseUrl: srv.url, model: 'editor', k: 4, concurrency: 2, temperature: 0.3, topP: 0.9, maxTokens: 512, extraBody: EXTRA, maxRetries: 0, timeoutMs: 60000, retries: 1, check: 'full', select: 'best-of-k' });
  t.like(meta.config, { engineer, llmEditor });
  t.regex(readFileSync(join(out, RUN_FILES.report), 'utf8'), /\| prompted LLM editor \|.*\| 100 % \|/);

  // a rerun of the same command resumes: nothing runs, the server is not asked again
  const n = backend.requests.length;
  t.is((await runExpMain({ ...SMALL, methods: ['vanilla', 'llm-editor'], engineer, llmEditor, out }, { ...quiet, cluster: rt.cluster })).ran, 0);
  t.is(backend.requests.length, n);

  // every candidate invalid (asked again once each): the row is invalid, counted in the valid-patch rate, scored unpatched
  const out2 = join(root, 'invalid');
  await runExpMain({ ...SMALL, methods: ['vanilla', 'llm-editor'], engineer, llmEditor: { ...llmEditor, k: 2, temperature: 0.2 }, out: out2 }, { ...quiet, cluster: rt.cluster });
  const bad = rowsOf(out2).find((x) => x.method === 'llm-editor')!;
  t.regex(bad.invalid!, /none of the 2 candidates is a valid patch/);
  t.like(bad.candidates, { k: 2, valid: 0, invalid: 2, retried: 2, repaired: 0, chosen: null });
  t.is(bad.patch, null);
  t.deepEqual(bad.outcomes, rowsOf(out2).find((x) => x.method === 'vanilla')!.outcomes);
  t.regex(readFileSync(join(out2, RUN_FILES.report), 'utf8'), /\| prompted LLM editor \|.*\| 0 % \|/);

  // the endpoint fails (after the client's retries): an infrastructure failure, never a row or a score
  const down = await serve(t, async () => {
    throw new Error('out of memory');
  });
  const out3 = join(root, 'down');
  const e = (await t.throwsAsync(runExpMain({ ...SMALL, methods: ['llm-editor'], engineer: `openai:${down.url}#editor`, llmEditor: { maxRetries: 0 }, out: out3 }, { ...quiet, cluster: rt.cluster }))) as ExpError;
  t.is(e.code, 'EXP_METHOD_FAILED');
  t.regex(e.message, /infrastructure failure, not an invalid candidate: no row was written/);
  t.false(existsSync(join(out3, RUN_FILES.results)) && readFileSync(join(out3, RUN_FILES.results), 'utf8').includes('llm-editor'));
});
