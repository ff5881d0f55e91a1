/**
 * One colour per method, the same in every chart: a method's bars are found by colour across
 * plots and runs, whatever else a chart shows or leaves out (the Δ chart has no vanilla bar).
 */

/** The built-in methods' colours, keyed by method name (not label). */
export const METHOD_COLOURS: Readonly<Record<string, string>> = {
  vanilla: '#8c8c8c',
  react: '#f28e2b',
  'self-refine': '#e15759',
  'prompted-editor': '#4e79a7',
  'best-fixed-patch': '#9c755f',
  'best-fixed': '#9c755f',
  'best-fixed-transfer': '#c7a17a',
  'engineer-sft': '#76b7b2',
  'engineer-grpo': '#59a14f',
  'engineer-grpo-transfer': '#a5d89b',
};

/** Colours other names hash into; none of them is a built-in method's. */
export const HASHED_COLOURS: readonly string[] = ['#edc948', '#b07aa1', '#ff9da7', '#499894', '#d37295', '#8cd17d', '#f1ce63', '#a0cbe8', '#ffbe7d', '#86bcb6', '#d4a6c8', '#b6992d'];

// FNV-1a: a stable hash, the same in every process and release
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * The colour of a method by its name: a built-in one's from {@link METHOD_COLOURS}, any other
 * name's by a stable hash into {@link HASHED_COLOURS}.
 *
 * @example
 * methodColour('vanilla') // '#8c8c8c', in every chart
 */
export function methodColour(name: string): string {
  return METHOD_COLOURS[name] ?? HASHED_COLOURS[fnv1a(name) % HASHED_COLOURS.length]!;
}
