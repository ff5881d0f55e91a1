/** Reading an ONNX file's metadata without loading it (no onnxruntime): what graph an export is. */

/**
 * The metadata_props of an ONNX file (ModelProto field 14), read from its top-level fields
 * without parsing the graph. Empty when there are none or the bytes are not a ModelProto.
 */
export function onnxMetadata(bytes: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  const dec = new TextDecoder();
  let i = 0;
  const varint = (end: number): number => {
    let x = 0;
    let mul = 1;
    for (;;) {
      if (i >= end) throw new Error('truncated varint');
      const b = bytes[i++]!;
      x += (b & 0x7f) * mul;
      if (b < 0x80) return x;
      mul *= 128;
    }
  };
  const fields = (start: number, end: number, each: (field: number, s: number, e: number) => void): void => {
    i = start;
    while (i < end) {
      const tag = varint(end);
      const field = Math.floor(tag / 8);
      const wire = tag & 7;
      if (wire === 0) varint(end);
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else if (wire === 2) {
        const n = varint(end);
        const s = i;
        i += n;
        if (i > end) throw new Error('truncated field');
        each(field, s, i);
      } else throw new Error(`wire type ${wire}`);
    }
  };
  try {
    fields(0, bytes.length, (field, s, e) => {
      if (field !== 14) return;
      const back = i;
      let key = '';
      let value = '';
      fields(s, e, (f, a, b) => {
        if (f === 1) key = dec.decode(bytes.subarray(a, b));
        if (f === 2) value = dec.decode(bytes.subarray(a, b));
      });
      i = back;
      if (key) out[key] = value;
    });
  } catch {
    return {};
  }
  return out;
}

/** The decode graph interface version this code runs (learner/server.py DECODE_GRAPH_VERSION). */
export const DECODE_GRAPH_VERSION = 2;

/** Whether the bytes are an hr1 decode graph of this code's version (learner/server.py export, graph 'decode'). */
export function isDecodeGraph(bytes: Uint8Array): boolean {
  const m = onnxMetadata(bytes);
  return m['hr1_graph'] === 'decode' && m['hr1_decode_version'] === String(DECODE_GRAPH_VERSION);
}
