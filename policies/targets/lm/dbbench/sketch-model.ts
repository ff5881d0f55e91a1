/**
 * A DBBench sketch parser (sketch.ts) served by onnxruntime-node in the v0.2 protocol, behind the
 * harness's Model interface. One decision:
 *
 * - before any operation: parse the request (question, table name, headers, and what a harness
 *   added: skills, a hint turn, injected hints, read as text beside the question) and play the
 *   SQL of the model's sketch (greedy);
 * - after an operation the env answered with a result: answer with the result's cells (as the
 *   synthetic teacher does, and a real agent loop would);
 * - after an SQL error: parse again, the sketch sampled at the model's temperature from the
 *   decision's seeded RNG, so a retry can read the request differently; after three errors it
 *   answers `[]`.
 *
 * The agent loop is fixed code; what is learned is the parse, and its mistakes (kind, columns,
 * spans) are the target's failures.
 */
import * as ort from 'onnxruntime-node';
import type { DecisionContext, Model } from '../../../../harness/index.ts';
import { SQL_ERROR } from '../../../../envs/dbbench/index.ts';
import { ortThreadOptions } from '../../../../learner/graph.ts';
import { decisionRng } from '../model.ts';
import { LmTargetError } from '../errors.ts';
import { answerText, operationText, resultCells } from './synth.ts';
import { decodeSketch, encodeSketch, parseRequest, SKETCH_FEATURES, SKETCH_MAX_COLS, type SketchInput, type SketchOutputs } from './sketch.ts';

/** operations tried before the parser gives up and answers `[]` */
export const SKETCH_MAX_TRIES = 3;

/** A loaded sketch parser: run it on one request. */
export interface SketchRunner {
  run(inp: SketchInput): Promise<{ enc: ReturnType<typeof encodeSketch>; out: SketchOutputs }>;
  release(): Promise<void>;
}

/** Load a sketch parser's ONNX graph from `file`. */
export async function loadSketch(file: string, label: string): Promise<SketchRunner> {
  let session: ort.InferenceSession;
  try {
    // intraOpNumThreads left out unless set: undefined throws in onnxruntime-node
    session = await ort.InferenceSession.create(file, { ...ortThreadOptions() });
  } catch (e) {
    throw new LmTargetError('LM_BAD_META', `cannot load ${label}: ${(e as Error).message}; rebuild it (\`hr1 zoo build --only NAME --force\`)`, { cause: e });
  }
  for (const n of ['feats', 'pos', 'mask', 'qmask', 'colmat']) {
    if (!session.inputNames.includes(n)) throw new LmTargetError('LM_BAD_META', `${label} is not a sketch parser (no input '${n}'); rebuild it`, { data: { input: n } });
  }
  return {
    async run(inp) {
      const enc = encodeSketch(inp);
      const L = enc.length;
      const feeds = {
        feats: new ort.Tensor('int64', BigInt64Array.from(enc.feats.map((x) => BigInt(x))), [1, L, SKETCH_FEATURES]),
        pos: new ort.Tensor('int64', BigInt64Array.from(enc.pos.map((x) => BigInt(x))), [1, L]),
        mask: new ort.Tensor('float32', Float32Array.from(enc.mask), [1, L]),
        qmask: new ort.Tensor('float32', Float32Array.from(enc.qmask), [1, L]),
        colmat: new ort.Tensor('float32', Float32Array.from(enc.colmat), [1, SKETCH_MAX_COLS, L]),
      };
      const r = await session.run(feeds);
      const get = (n: string): Float32Array => r[n]!.data as Float32Array;
      return { enc, out: { kind: get('kind'), sel: get('sel'), num: get('num'), where: get('where'), set: get('set'), start: get('start'), end: get('end') } };
    },
    release: async () => {
      await session.release();
    },
  };
}

/** What a harness put in the conversation, newest first: the hint turn, injected hints, skills. */
export function harnessText(messages: DecisionContext['messages'], requestAt: number): string {
  const parts: string[] = [];
  const last = messages[messages.length - 1];
  if (last && last.role === 'user' && last.content.startsWith('Hint: ')) parts.push(last.content.slice(6));
  for (let i = messages.length - 1; i > requestAt; i--) {
    const m = messages[i]!;
    // an injected hint follows the env's observation, so it is a user turn after a user turn
    if (m.role === 'user' && messages[i - 1]?.role === 'user' && i - 1 > requestAt && !m.content.startsWith('Hint: ')) parts.push(m.content);
  }
  for (const m of messages) if (m.role === 'system') parts.push(m.content.replace(/^[\s\S]*?Skills:\s*/, ''));
  return parts.join(' ');
}

/** The sketch parser as a harness Model on DBBench v0.2 (see the file comment). */
export function sketchPolicy(name: string, runner: SketchRunner, o: { temperature: number }): Model {
  return {
    name,
    async decide(ctx) {
      const msgs = ctx.messages;
      const at = msgs.findIndex((m) => m.role === 'user' && parseRequest(m.content) !== null);
      if (at < 0) return answerText([]);
      const req = parseRequest(msgs[at]!.content)!;
      const after = msgs.slice(at + 1).filter((m) => !(m.role === 'user' && m.content.startsWith('Hint: ')));
      const ops = after.filter((m) => m.role === 'assistant' && /Action:\s*Operation/i.test(m.content)).length;
      // the env's reply to the last operation: the first user turn after the last assistant turn
      let lastAssistant = -1;
      after.forEach((m, i) => {
        if (m.role === 'assistant') lastAssistant = i;
      });
      const reply = lastAssistant >= 0 ? after[lastAssistant + 1] : undefined;
      if (ops > 0 && reply && !SQL_ERROR.test(reply.content)) return answerText(resultCells(reply.content) ?? []);
      if (ops >= SKETCH_MAX_TRIES) return answerText([]);
      const extra = harnessText(msgs, at);
      const inp: SketchInput = { ...req, ...(extra ? { extra } : {}) };
      const { enc, out } = await runner.run(inp);
      const { sql } = decodeSketch(inp, enc, out, ops === 0 ? {} : { rng: decisionRng(ctx), temperature: o.temperature });
      return operationText(sql);
    },
  };
}
