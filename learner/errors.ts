/** Typed errors of the learner process and the ONNX sampler. Each carries a `code` and its values in `data`. */
import { Hr1Error, type Hr1ErrorFields } from '../cluster/errors.ts';

/**
 * Codes of the learner family: one per class below, plus those raised as a plain Hr1Error by
 * actors/learner.ts (`LEARNER_GAVE_UP`: more child deaths than maxChildRestarts;
 * `NO_OBJECT_STORE`: a learner spawned outside a cluster node).
 */
export type LearnerErrorCode =
  | 'LEARNER_DEPENDENCY'
  | 'LEARNER_DIED'
  | 'LEARNER_OP'
  | 'LEARNER_CHECKPOINT'
  | 'LEARNER_PROTOCOL'
  | 'LEARNER_TIMEOUT'
  | 'LEARNER_GAVE_UP'
  | 'LEARNER_BAD_ARGS'
  | 'NO_OBJECT_STORE';

/** Codes of {@link SamplerError}. */
export type SamplerErrorCode = 'SAMPLER_MODEL' | 'SAMPLER_INPUT' | 'SAMPLER_GRAMMAR' | 'SAMPLER_RUN' | 'SAMPLER_CLOSED';

/** The apt packages the learner needs on Debian 12 (no PyPI). */
export const LEARNER_APT_PACKAGES = ['python3-torch', 'python3-onnx', 'python3-numpy', 'python3-msgpack', 'libopenblas0-pthread'] as const;

const APT_OF: Record<string, string> = { torch: 'python3-torch', numpy: 'python3-numpy', msgpack: 'python3-msgpack', onnx: 'python3-onnx' };

/** Python or one of its modules is missing: says which apt package to install. */
export class LearnerDependencyError extends Hr1Error<'LEARNER_DEPENDENCY'> {
  constructor(
    readonly python: string,
    readonly missing: string[],
    detail: string,
    fields: Hr1ErrorFields = {},
  ) {
    const pkgs = missing.length ? missing.map((m) => APT_OF[m] ?? m) : ['python3'];
    const what = missing.length ? `cannot import ${missing.join(', ')}` : 'cannot be started';
    super('LEARNER_DEPENDENCY', `the learner's python (${python}) ${what} (${detail}); install with \`apt-get install -y ${[...new Set([...pkgs, 'libopenblas0-pthread'])].join(' ')}\` and call /usr/bin/python3 (Debian's torch is invisible to other pythons)`, { retryable: false, ...fields, data: { python, missing, packages: pkgs, ...fields.data } });
  }
}

/** The learner process died; names the op that was running (or `idle`). */
export class LearnerDiedError extends Hr1Error<'LEARNER_DIED'> {
  constructor(
    readonly op: string,
    readonly exitCode: number | null,
    readonly signal: string | null,
    stderrTail: string,
    fields: Hr1ErrorFields = {},
  ) {
    super('LEARNER_DIED', `the learner process died ${op === 'idle' ? 'while idle' : `during ${op}`} (${signal ? `signal ${signal}` : `exit code ${exitCode}`})${stderrTail ? `; its last stderr: ${stderrTail.trim().slice(-600)}` : ''}`, { retryable: true, ...fields, data: { op, exitCode, signal, stderr: stderrTail, ...fields.data } });
  }
}

/** An op failed inside the learner (bad request, corrupt checkpoint, torch error); carries the python traceback. */
export class LearnerOpError extends Hr1Error<'LEARNER_OP' | 'LEARNER_CHECKPOINT'> {
  constructor(
    readonly op: string,
    readonly type: string,
    message: string,
    traceback: string,
    fields: Hr1ErrorFields = {},
  ) {
    super(type === 'CheckpointError' ? 'LEARNER_CHECKPOINT' : 'LEARNER_OP', `learner op ${op} failed: ${type}: ${message}`, { retryable: false, remoteStack: traceback, ...fields, data: { op, type, ...fields.data } });
  }
}

/** A frame that does not decode, or a reply that does not match a request. */
export class LearnerProtocolError extends Hr1Error<'LEARNER_PROTOCOL'> {
  constructor(message: string, fields: Hr1ErrorFields = {}) {
    super('LEARNER_PROTOCOL', message, { retryable: false, ...fields });
  }
}

/** An op took longer than its timeout; the process is killed (its state is not trustworthy). */
export class LearnerTimeoutError extends Hr1Error<'LEARNER_TIMEOUT'> {
  constructor(
    readonly op: string,
    readonly timeoutMs: number,
    fields: Hr1ErrorFields = {},
  ) {
    super('LEARNER_TIMEOUT', `learner op ${op} took longer than ${timeoutMs} ms; the process was killed — raise the timeout for large batches`, { retryable: true, ...fields, data: { op, timeoutMs, ...fields.data } });
  }
}

/** The sampler cannot load or run a model, or was asked for something impossible. */
export class SamplerError extends Hr1Error<SamplerErrorCode> {
  constructor(code: SamplerErrorCode, message: string, fields: Hr1ErrorFields = {}) {
    super(code, message, { retryable: false, ...fields });
  }
}
