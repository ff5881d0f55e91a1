/**
 * Charts rendered on the server by ECharts (SVG, no DOM) and rasterised by resvg (PNG). Same
 * input → the same SVG text.
 */
import * as echarts from 'echarts';
import { Resvg } from '@resvg/resvg-js';
import type { Interval } from './bootstrap.ts';

const FONT = 'DejaVu Sans, sans-serif';
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

function render(option: Record<string, unknown>, width: number, height: number): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  chart.setOption({ animation: false, color: PALETTE, textStyle: { fontFamily: FONT }, backgroundColor: '#ffffff', ...option });
  const svg = chart.renderToSVGString();
  chart.dispose();
  return stableIds(svg);
}

/** ECharts numbers its class and id names per process (zr3-cls-17): renumber per document. */
function stableIds(svg: string): string {
  const seen = new Map<string, string>();
  return svg.replace(/\bzr\d+-[A-Za-z-]*\d+\b/g, (tok) => {
    let id = seen.get(tok);
    if (!id) seen.set(tok, (id = `hr1-${seen.size}`));
    return id;
  });
}

export interface BarSeries {
  name: string;
  /** one interval per category (null: no value), in the chart's unit */
  values: (Interval | null)[];
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
  const series: Record<string, unknown>[] = o.series.map((s) => ({ type: 'bar', name: s.name, data: s.values.map((v) => (v && Number.isFinite(v.mean) ? r(v.mean) : null)), barGap: '10%' }));
  o.series.forEach((s, si) => {
    series.push({
      type: 'custom',
      name: s.name,
      z: 10,
      tooltip: { show: false },
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
  return render(
    {
      title: { text: o.title, subtext: o.subtitle ?? '', left: 'center', textStyle: { fontSize: 14 } },
      legend: { bottom: 0, data: o.series.map((s) => s.name) },
      grid: { left: 60, right: 20, top: 60, bottom: 60 },
      xAxis: { type: 'category', data: o.categories },
      yAxis: { type: 'value', name: o.yName ?? '', nameTextStyle: { align: 'left' } },
      series,
    },
    o.width ?? Math.max(640, 120 + o.categories.length * (40 + 28 * nS)),
    o.height ?? 420,
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
  return render(
    {
      title: { text: o.title, subtext: o.subtitle ?? '', left: 'center', textStyle: { fontSize: 14 } },
      grid: { left: 150, right: 90, top: 60, bottom: 40 },
      xAxis: { type: 'category', data: o.x, splitArea: { show: true } },
      yAxis: { type: 'category', data: o.y, inverse: true, splitArea: { show: true } },
      visualMap: { min: -max, max, calculable: false, orient: 'vertical', right: 10, top: 'middle', inRange: { color: ['#b2182b', '#f7f7f7', '#2166ac'] } },
      series: [{ type: 'heatmap', data, label: { show: true, fontSize: 11 } }],
    },
    o.width ?? Math.max(520, 260 + o.x.length * 110),
    o.height ?? Math.max(260, 110 + o.y.length * 26),
  );
}

/** Rasterise an SVG to PNG (white background). */
export function svgToPng(svg: string): Buffer {
  const r = new Resvg(svg, { background: '#ffffff', font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } });
  return Buffer.from(r.render().asPng());
}
