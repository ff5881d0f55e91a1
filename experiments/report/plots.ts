/**
 * Charts rendered on the server by ECharts (SVG, no DOM) and rasterised by resvg (PNG). Same
 * input → the same SVG text.
 */
import { charting } from './charting.ts';
import type { Interval } from './bootstrap.ts';
import { methodColour } from './colours.ts';

const FONT = 'DejaVu Sans, sans-serif';
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

// DejaVu Sans advance widths of ASCII 32..126, in hundredths of an em (from its hmtx table): the
// font resvg draws with. ECharts' own server-side estimate is narrower, so its legends overlapped.
const DEJAVU_WIDTHS = [32, 40, 46, 84, 64, 95, 78, 27, 39, 39, 50, 84, 32, 36, 32, 34, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 34, 34, 84, 84, 84, 53, 100, 68, 69, 70, 77, 63, 58, 77, 75, 29, 29, 66, 56, 86, 75, 79, 60, 79, 69, 63, 61, 73, 68, 99, 69, 61, 69, 39, 34, 39, 84, 50, 50, 61, 63, 55, 63, 62, 35, 63, 63, 28, 28, 58, 28, 97, 63, 61, 63, 63, 41, 52, 39, 63, 59, 82, 59, 59, 52, 64, 34, 64, 84];

/** Legend text size, px. */
export const LEGEND_FONT_SIZE = 12;
/** A legend item: its icon (25 px) and the gap before its text, as ECharts draws them. */
export const LEGEND_ICON_WIDTH = 30;
const LEGEND_GAP = 18;
const LEGEND_ROW = 22;
const LEGEND_MARGIN = 16;

/** The width of `text` in DejaVu Sans at `size` px (non-ASCII characters count as a full em: wide enough). */
export function textWidth(text: string, size = LEGEND_FONT_SIZE): number {
  let w = 0;
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    w += c >= 32 && c < 127 ? DEJAVU_WIDTHS[c - 32]! : 100;
  }
  return (w / 100) * size;
}

/** Where each legend item goes: rows that fit `width`, each row centred; never a cut label. */
export function legendLayout(names: readonly string[], width: number): { rows: number; items: { name: string; x: number; row: number; width: number }[] } {
  const avail = width - 2 * LEGEND_MARGIN;
  const rows: { name: string; width: number }[][] = [];
  let cur: { name: string; width: number }[] = [];
  let used = 0;
  for (const name of names) {
    const w = LEGEND_ICON_WIDTH + Math.ceil(textWidth(name));
    if (cur.length > 0 && used + LEGEND_GAP + w > avail) {
      rows.push(cur);
      cur = [];
      used = 0;
    }
    used += (cur.length ? LEGEND_GAP : 0) + w;
    cur.push({ name, width: w });
  }
  if (cur.length) rows.push(cur);
  const items = rows.flatMap((r, ri) => {
    const total = r.reduce((a, it) => a + it.width, 0) + LEGEND_GAP * (r.length - 1);
    let x = Math.max(LEGEND_MARGIN, Math.round((width - total) / 2));
    return r.map((it) => {
      const out = { name: it.name, x, row: ri, width: it.width };
      x += it.width + LEGEND_GAP;
      return out;
    });
  });
  return { rows: rows.length, items };
}

/** A label broken at spaces into lines no wider than `max` px (a word wider than that keeps its own line). */
export function wrapLabel(text: string, max: number, size = LEGEND_FONT_SIZE): string {
  const lines: string[] = [];
  let cur = '';
  for (const word of text.split(' ')) {
    const next = cur ? `${cur} ${word}` : word;
    if (cur && textWidth(next, size) > max) {
      lines.push(cur);
      cur = word;
    } else cur = next;
  }
  if (cur) lines.push(cur);
  return lines.join('\n');
}

/** The chart width that holds its title (14 px bold, about a tenth wider than regular) and subtitle on one line. */
function widthForTitle(title: string, subtitle: string | undefined, width: number): number {
  return Math.ceil(Math.max(width, textWidth(title, 14) * 1.1 + 40, textWidth(subtitle ?? '', 12) + 40));
}

/** The chart width that holds the widest legend item on one row. */
function widthForLegend(names: readonly string[], width: number): number {
  const widest = Math.max(0, ...names.map((n) => LEGEND_ICON_WIDTH + Math.ceil(textWidth(n))));
  return Math.max(width, widest + 2 * LEGEND_MARGIN);
}

/** One ECharts legend per item, placed by {@link legendLayout} (ECharts' own wrapping measures text too narrow). */
function legends(names: readonly string[], width: number, top: number): Record<string, unknown>[] {
  return legendLayout(names, width).items.map((it) => ({
    data: [it.name],
    left: it.x,
    top: top + it.row * LEGEND_ROW,
    padding: 0,
    itemGap: 0,
    selectedMode: false,
    textStyle: { fontSize: LEGEND_FONT_SIZE },
  }));
}

function render(option: Record<string, unknown>, width: number, height: number): string {
  const chart = charting().echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  chart.setOption({ animation: false, color: PALETTE, textStyle: { fontFamily: FONT }, backgroundColor: '#ffffff', ...option });
  const svg = chart.renderToSVGString();
  chart.dispose();
  return stableIds(svg);
}

/** ECharts numbers its class and id names per process (zr3-cls-17): renumber per document. */
export function stableIds(svg: string): string {
  const seen = new Map<string, string>();
  return svg.replace(/\bzr\d+-[A-Za-z-]*\d+\b/g, (tok) => {
    let id = seen.get(tok);
    if (!id) seen.set(tok, (id = `hr1-${seen.size}`));
    return id;
  });
}

/** A series' colour: its own, else its method's (the same in every chart), else the palette by position. */
function colourOf(s: { colour?: string | undefined; method?: string | undefined }, i: number): string {
  return s.colour ?? (s.method !== undefined ? methodColour(s.method) : PALETTE[i % PALETTE.length]!);
}

/** A chart's title, its legend under the axis labels, and a grid that leaves room for both. */
function chartFrame(o: { title: string; subtitle?: string | undefined }, names: readonly string[], l: { width: number; height: number; labelLines: number; legendTop: number }, gridTop: number): Record<string, unknown> {
  return {
    title: { text: o.title, subtext: o.subtitle ?? '', left: 'center', textStyle: { fontSize: 14 } },
    legend: legends(names, l.width, l.legendTop + 4),
    grid: { left: 60, right: 20, top: gridTop, bottom: l.height - l.legendTop + 14 + l.labelLines * 14 },
  };
}

/**
 * The size of a chart over categories: wide enough for its title and legend, every category label
 * wrapped to its band, and taller by a row for each legend row past the first and each extra label line.
 */
function categoryLayout(o: { title: string; subtitle?: string | undefined; categories: string[]; width?: number | undefined; height?: number | undefined }, names: readonly string[], defaultWidth: number, defaultHeight: number): { width: number; height: number; cats: string[]; labelLines: number; legendTop: number } {
  const width = widthForTitle(o.title, o.subtitle, widthForLegend(names, o.width ?? defaultWidth));
  const rows = legendLayout(names, width).rows;
  const band = (width - 80) / Math.max(1, o.categories.length);
  const cats = o.categories.map((c) => wrapLabel(c, band - 8));
  const labelLines = Math.max(1, ...cats.map((c) => c.split('\n').length));
  const height = (o.height ?? defaultHeight) + Math.max(0, rows - 1) * LEGEND_ROW + (labelLines - 1) * 14;
  return { width, height, cats, labelLines, legendTop: height - 10 - rows * LEGEND_ROW };
}

export interface BarSeries {
  /** the legend label */
  name: string;
  /** one interval per category (null: no value), in the chart's unit */
  values: (Interval | null)[];
  /** the method the series shows: its colour is {@link methodColour}(method), the same in every chart */
  method?: string;
  /** an explicit colour (wins over `method`); neither: the palette by position */
  colour?: string;
}

/**
 * Grouped bars with 95% interval whiskers.
 *
 * @example
 * barChart({ title: 'success', categories: ['alfworld'], series: [{ name: 'vanilla', values: [{ mean: 0.5, lo: 0.4, hi: 0.6, n: 80 }] }] })
 */
export function barChart(o: { title: string; subtitle?: string; categories: string[]; series: BarSeries[]; yName?: string; scale?: number; width?: number; height?: number }): string {
  const k = o.scale ?? 100;
  const nS = o.series.length;
  const r = (x: number) => Math.round(x * k * 100) / 100;
  const series: Record<string, unknown>[] = o.series.map((s, i) => ({ type: 'bar', name: s.name, itemStyle: { color: colourOf(s, i) }, data: s.values.map((v) => (v && Number.isFinite(v.mean) ? r(v.mean) : null)), barGap: '10%' }));
  o.series.forEach((s, si) => {
    series.push({
      type: 'custom',
      name: s.name,
      z: 10,
      tooltip: { show: false },
      itemStyle: { color: colourOf(s, si) },
      // the whiskers' ends count in the value axis' extent
      encode: { x: 0, y: [1, 2] },
      data: s.values.map((v, ci) => (v && Number.isFinite(v.lo) ? [ci, r(v.lo), r(v.hi)] : [ci, null, null])),
      renderItem: (params: unknown, api: { value: (i: number) => number; coord: (p: number[]) => number[]; size: (p: number[]) => number[] }) => {
        const lo = api.value(1);
        const hi = api.value(2);
        if (lo === null || hi === null || !Number.isFinite(lo)) return null;
        const band = api.size([1, 0])[0]!;
        const groupW = band * 0.8;
        const barW = groupW / nS;
        const cx = api.coord([api.value(0), 0])[0]! - groupW / 2 + barW * (si + 0.5);
        const y0 = api.coord([0, lo])[1]!;
        const y1 = api.coord([0, hi])[1]!;
        const cap = Math.min(6, barW / 3);
        const style = { stroke: '#222', lineWidth: 1.2 };
        return {
          type: 'group',
          children: [
            { type: 'line', shape: { x1: cx, y1: y0, x2: cx, y2: y1 }, style },
            { type: 'line', shape: { x1: cx - cap, y1: y0, x2: cx + cap, y2: y0 }, style },
            { type: 'line', shape: { x1: cx - cap, y1: y1, x2: cx + cap, y2: y1 }, style },
          ],
        };
      },
    });
  });
  const names = o.series.map((s) => s.name);
  const { width, height, cats, labelLines, legendTop } = categoryLayout(o, names, Math.max(640, 120 + o.categories.length * (40 + 28 * nS)), 420);
  return render(
    {
      ...chartFrame(o, names, { width, height, labelLines, legendTop }, 60),
      xAxis: { type: 'category', data: cats, axisLabel: { interval: 0 } },
      yAxis: { type: 'value', name: o.yName ?? '', nameTextStyle: { align: 'left' } },
      series,
    },
    width,
    height,
  );
}

export interface StripSeries {
  name: string;
  /** per category, the points (e.g. one per packet), in [0, 1] before `scale` */
  values: number[][];
  method?: string;
  colour?: string;
}

/**
 * One dot per value (e.g. per packet) beside each other series' dots in each category, with a
 * short bar at the series' mean: how much a method's result depends on which packet it read.
 *
 * @example
 * stripChart({ title: 'per packet', categories: ['ALFWorld success'], series: [{ name: 'editor', values: [[0.4, 0.6]] }] })
 */
export function stripChart(o: { title: string; subtitle?: string; categories: string[]; series: StripSeries[]; yName?: string; scale?: number; width?: number; height?: number }): string {
  const k = o.scale ?? 100;
  const nS = Math.max(1, o.series.length);
  const r = (x: number) => Math.round(x * k * 100) / 100;
  // series si sits at category + its slot's offset; dots of one slot spread a little, in order (no randomness)
  const slot = (si: number) => (si + 0.5) / nS - 0.5;
  const series: Record<string, unknown>[] = [];
  o.series.forEach((s, si) => {
    const pts: [number, number][] = [];
    const means: [number, number][] = [];
    s.values.forEach((vs, ci) => {
      vs.forEach((v, j) => pts.push([ci + 0.8 * slot(si) + (vs.length > 1 ? (j / (vs.length - 1) - 0.5) * (0.5 / nS) : 0), r(v)]));
      if (vs.length) means.push([ci + 0.8 * slot(si), r(vs.reduce((a, b) => a + b, 0) / vs.length)]);
    });
    series.push({ type: 'scatter', name: s.name, symbolSize: 8, itemStyle: { color: colourOf(s, si), opacity: 0.85 }, data: pts });
    series.push({ type: 'scatter', name: s.name, symbol: 'rect', symbolSize: [Math.max(10, 120 / nS / Math.max(1, o.categories.length)), 3], itemStyle: { color: '#222' }, data: means, tooltip: { show: false } });
  });
  const names = o.series.map((s) => s.name);
  const { width, height, cats, labelLines, legendTop } = categoryLayout(o, names, Math.max(560, 120 + o.categories.length * (60 + 30 * nS)), 380);
  return render(
    {
      ...chartFrame(o, names, { width, height, labelLines, legendTop }, 72),
      // a value axis so dots can sit beside each other; labels and ticks only at the categories' centres
      xAxis: { type: 'value', min: -0.5, max: o.categories.length - 0.5, splitLine: { show: false }, axisTick: { customValues: cats.map((_, i) => i) }, axisLabel: { customValues: cats.map((_, i) => i), formatter: (v: number) => cats[Math.round(v)] ?? '' } },
      yAxis: { type: 'value', name: o.yName ?? '', nameTextStyle: { align: 'left' }, axisLine: { show: true, onZero: false } },
      series,
    },
    width,
    height,
  );
}

/**
 * A heatmap of values (null cells blank), labelled in the cells.
 *
 * @example
 * heatmap({ title: 'gain', x: ['alfworld'], y: ['sim/qwen-3b'], values: [[0.05]] })
 */
export function heatmap(o: { title: string; subtitle?: string; x: string[]; y: string[]; values: (number | null)[][]; scale?: number; width?: number; height?: number }): string {
  const k = o.scale ?? 100;
  const data: [number, number, number | string][] = [];
  let max = 0;
  o.values.forEach((row, yi) =>
    row.forEach((v, xi) => {
      if (v === null || !Number.isFinite(v)) return;
      const val = Math.round(v * k * 10) / 10;
      max = Math.max(max, Math.abs(val));
      data.push([xi, yi, val]);
    }),
  );
  max = max || 1;
  const width = widthForTitle(o.title, o.subtitle, o.width ?? Math.max(520, 260 + o.x.length * 110));
  // every column label shown, broken into lines that fit its column
  const xs = o.x.map((x) => wrapLabel(x, (width - 240) / Math.max(1, o.x.length) - 8));
  const xLines = Math.max(1, ...xs.map((x) => x.split('\n').length));
  return render(
    {
      title: { text: o.title, subtext: o.subtitle ?? '', left: 'center', textStyle: { fontSize: 14 } },
      grid: { left: 150, right: 90, top: 60, bottom: 26 + 14 * xLines },
      xAxis: { type: 'category', data: xs, splitArea: { show: true }, axisLabel: { interval: 0 } },
      yAxis: { type: 'category', data: o.y, inverse: true, splitArea: { show: true } },
      visualMap: { min: -max, max, calculable: false, orient: 'vertical', right: 10, top: 'middle', inRange: { color: ['#b2182b', '#f7f7f7', '#2166ac'] } },
      series: [{ type: 'heatmap', data, label: { show: true, fontSize: 11 } }],
    },
    width,
    (o.height ?? Math.max(260, 110 + o.y.length * 26)) + 14 * (xLines - 1),
  );
}

/** One small chart of a {@link panelChart}: lines (or bars, stacked by `stack`) over a shared x. */
export interface Panel {
  title: string;
  /** the x values (iterations), shared by the panel's series */
  x: (number | string)[];
  xName?: string;
  yName?: string;
  series: { name: string; values: (number | null)[]; kind?: 'line' | 'bar'; stack?: string; colour?: string }[];
}

/**
 * Small charts in a grid (`columns` across), one legend under them all; series names must be
 * unique across panels (a name is one legend entry).
 *
 * @example
 * panelChart({ title: 'training', panels: [{ title: 'loss', x: [1, 2], series: [{ name: 'SFT loss', values: [2.1, 1.4] }] }] })
 */
export function panelChart(o: { title: string; subtitle?: string; panels: Panel[]; columns?: number; panelWidth?: number; panelHeight?: number }): string {
  const cols = Math.max(1, Math.min(o.columns ?? 2, o.panels.length));
  const pw = o.panelWidth ?? 420;
  const ph = o.panelHeight ?? 210;
  const top = 70;
  const gapY = 58;
  const names = o.panels.flatMap((p) => p.series.map((s) => s.name));
  const width = widthForLegend(names, cols * pw + 40);
  const prows = Math.ceil(o.panels.length / cols);
  const rows = legendLayout(names, width).rows;
  const legendTop = top + prows * (ph + gapY);
  const height = legendTop + rows * LEGEND_ROW + 10;
  const cellW = (width - 40) / cols;
  const grid: Record<string, unknown>[] = [];
  const xAxis: Record<string, unknown>[] = [];
  const yAxis: Record<string, unknown>[] = [];
  const titles: Record<string, unknown>[] = [{ text: o.title, subtext: o.subtitle ?? '', left: 'center', textStyle: { fontSize: 14 } }];
  const series: Record<string, unknown>[] = [];
  let k = 0;
  o.panels.forEach((p, i) => {
    const left = 20 + (i % cols) * cellW;
    const y0 = top + Math.floor(i / cols) * (ph + gapY);
    grid.push({ left: left + 50, top: y0 + 24, width: cellW - 80, height: ph - 40 });
    titles.push({ text: p.title, left: left + cellW / 2, top: y0, textAlign: 'center', textStyle: { fontSize: 12, fontWeight: 'normal' } });
    const bars = p.series.some((s) => s.kind === 'bar');
    xAxis.push({ type: 'category', gridIndex: i, data: p.x.map(String), name: p.xName ?? '', nameLocation: 'middle', nameGap: 22, boundaryGap: bars, axisLabel: { fontSize: 10 } });
    yAxis.push({ type: 'value', gridIndex: i, name: p.yName ?? '', scale: !bars, nameTextStyle: { fontSize: 10, align: 'left' }, axisLabel: { fontSize: 10 } });
    for (const s of p.series) {
      const colour = s.colour ?? PALETTE[k++ % PALETTE.length]!;
      series.push({
        type: s.kind ?? 'line',
        name: s.name,
        xAxisIndex: i,
        yAxisIndex: i,
        data: s.values.map((v) => (v === null || !Number.isFinite(v) ? null : Math.round(v * 1e4) / 1e4)),
        itemStyle: { color: colour },
        lineStyle: { color: colour, width: 1.6 },
        ...(s.kind === 'bar' ? { stack: s.stack } : { showSymbol: p.x.length <= 40, symbolSize: 4, connectNulls: false }),
      });
    }
  });
  return render({ title: titles, legend: legends(names, width, legendTop + 4), grid, xAxis, yAxis, series }, width, height);
}

/** Rasterise an SVG to PNG (white background). */
export function svgToPng(svg: string): Buffer {
  const r = new (charting().Resvg)(svg, { background: '#ffffff', font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } });
  return Buffer.from(r.render().asPng());
}
