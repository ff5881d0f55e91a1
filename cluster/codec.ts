import { Packr } from 'msgpackr';
import type { z } from 'zod';
import { CodecError, type Hr1ErrorFields } from './errors.ts';

/**
 * The one codec seam: msgpackr for bytes, zod for shape. Every transport (in-process, NATS,
 * worker threads) goes through it, so a bug that only shows over the wire shows in unit tests.
 */
// plain maps, no record extension: the bytes stay readable by any msgpack implementation
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** Encode a value to msgpack bytes (no validation). */
export function pack(value: unknown): Uint8Array {
  return packr.pack(value);
}

/** Decode msgpack bytes; malformed bytes become a `MALFORMED_MESSAGE` {@link CodecError}. */
export function unpack(bytes: Uint8Array, where: Hr1ErrorFields = {}): unknown {
  try {
    const v = packr.unpack(bytes);
    // 0xc1 is "never used" in msgpack; msgpackr hands back a sentinel object instead of failing
    if (typeof v === 'object' && v !== null && (v as { name?: unknown }).name === 'MessagePack 0xC1') throw new Error('byte 0xc1 is not valid msgpack');
    return v;
  } catch (e) {
    throw new CodecError('MALFORMED_MESSAGE', `malformed message (${bytes.length} bytes): not valid msgpack (${(e as Error).message}); send values encoded with the cluster codec`, { ...where, cause: e });
  }
}

/** Render zod issues as `path: message` lines. */
export function describeIssues(err: z.ZodError): string {
  return err.issues
    .slice(0, 8)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

/** Validate a value against a schema; a mismatch becomes a `SCHEMA_INVALID` {@link CodecError}. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, what: string, where: Hr1ErrorFields = {}): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new CodecError('SCHEMA_INVALID', `${what} does not match its schema: ${describeIssues(r.error)}`, {
      ...where,
      data: { issues: r.error.issues.slice(0, 8).map((i) => ({ path: i.path.map(String), message: i.message })) },
    });
  }
  return r.data;
}

/** Validate then pack. */
export function encode<S extends z.ZodType>(schema: S, value: unknown, what: string, where: Hr1ErrorFields = {}): Uint8Array {
  return pack(validate(schema, value, what, where));
}

/** Unpack then validate. */
export function decode<S extends z.ZodType>(schema: S, bytes: Uint8Array, what: string, where: Hr1ErrorFields = {}): z.output<S> {
  return validate(schema, unpack(bytes, where), what, where);
}
