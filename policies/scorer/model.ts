/**
 * A validation or reward model in onnxruntime-node: `features` [batch, F] → `score` [batch].
 */
import { readFile } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import { ValidatorError, ValidatorModelMissingError } from './errors.ts';
import { FEATURE_DIM } from './features.ts';
import { ortThreadOptions } from '../../learner/graph.ts';

export class ValueModel {
  private constructor(
    private readonly session: ort.InferenceSession,
    /** where it came from: `path:…`, `object:…` or `bytes` */
    readonly source: string,
  ) {}

  static async fromBytes(bytes: Uint8Array, source = 'bytes'): Promise<ValueModel> {
    try {
      // intraOpNumThreads left out: undefined throws in onnxruntime-node
      const session = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'all', ...ortThreadOptions() });
      if (!session.inputNames.includes('features') || !session.outputNames.includes('score')) throw new Error(`inputs ${session.inputNames.join(',')} / outputs ${session.outputNames.join(',')}; expected features → score`);
      return new ValueModel(session, source);
    } catch (e) {
      throw new ValidatorError('VALIDATOR_MODEL_MISMATCH', `cannot load a validator model from ${source} (${bytes.byteLength} bytes): ${(e as Error).message}; retrain it with trainValueModels()`, { cause: e, data: { source } });
    }
  }

  /** Load a file; a missing file is a {@link ValidatorModelMissingError} that says how to train one. */
  static async fromPath(path: string): Promise<ValueModel> {
    let bytes: Uint8Array;
    try {
      bytes = await readFile(path);
    } catch (e) {
      throw new ValidatorModelMissingError(`path:${path}`, e);
    }
    return ValueModel.fromBytes(bytes, `path:${path}`);
  }

  /** Scores of feature rows (each {@link FEATURE_DIM} wide). */
  async predict(rows: readonly (readonly number[])[]): Promise<number[]> {
    if (rows.length === 0) return [];
    const bad = rows.findIndex((r) => r.length !== FEATURE_DIM);
    if (bad >= 0) throw new ValidatorError('VALIDATOR_MODEL_MISMATCH', `feature row ${bad} has ${rows[bad]!.length} numbers, the models take ${FEATURE_DIM}; build rows with candidateFeatures()`);
    const x = new Float32Array(rows.length * FEATURE_DIM);
    rows.forEach((r, i) => x.set(r, i * FEATURE_DIM));
    let out;
    try {
      out = await this.session.run({ features: new ort.Tensor('float32', x, [rows.length, FEATURE_DIM]) });
    } catch (e) {
      throw new ValidatorError('VALIDATOR_MODEL_MISMATCH', `the model at ${this.source} rejected ${FEATURE_DIM}-wide features: ${(e as Error).message}; retrain it with this code's features`, { cause: e });
    }
    return Array.from(out['score']!.data as Float32Array);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
