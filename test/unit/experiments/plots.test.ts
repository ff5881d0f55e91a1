import test from 'ava';
import { barChart, heatmap, METHOD_COLOURS, methodColour, panelChart, svgToPng, wrapLabel } from '../../../experiments/report/index.ts';
import { legendItems, legendProblems, svgSize, type LegendItem } from '../../fixtures/svg-legend.ts';

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const bars = () =>
  barChart({
    title: 'exp main: sim/qwen-3b (SIMULATED)',
    categories: ['alfworld', 'dbbench', 'average'],
    series: [
      { name: 'vanilla', values: [{ mean: 0.5, lo: 0.4, hi: 0.6, n: 80 }, { mean: 0.6, lo: 0.5, hi: 0.7, n: 80 }, null] },
      { name: 'editor', values: [{ mean: 0.8, lo: 0.7, hi: 0.9, n: 80 }, { mean: 0.65, lo: 0.55, hi: 0.75, n: 80 }, { mean: 0.7, lo: 0.6, hi: 0.8, n: 160 }] },
    ],
  });

test('plots - a bar chart is an SVG document with its title, bars and whiskers, the same each time', (t) => {
  const svg = bars();
  t.true(svg.startsWith('<svg'), svg.slice(0, 40));
  t.true(svg.trimEnd().endsWith('</svg>'));
  t.regex(svg, /SIMULATED/);
  t.true((svg.match(/<path/g) ?? []).length >= 5, 'bars are drawn');
  t.true((svg.match(/<line|<path[^>]*d="M[^"]*L/g) ?? []).length >= 3, 'whiskers are drawn');
  t.is(bars(), svg);
});

test('plots - a heatmap labels its cells', (t) => {
  const svg = heatmap({ title: 'gain', x: ['alfworld', 'dbbench'], y: ['sim/qwen-3b (SIM)', 'sim/llama-8b (SIM)'], values: [[0.123, -0.05], [null, 0.2]] });
  t.true(svg.startsWith('<svg'));
  t.regex(svg, /12\.3/);
  t.regex(svg, /-5/);
  t.regex(svg, /sim\/llama-8b/);
});

test('plots - SVG to PNG gives a real PNG of non-trivial size', (t) => {
  const png = svgToPng(bars());
  t.deepEqual(png.subarray(0, 8), PNG_MAGIC);
  t.true(png.length > 5000, `png ${png.length} bytes`);
  // IHDR: width and height as in the SVG
  t.true(png.readUInt32BE(16) >= 640);
  t.is(png.readUInt32BE(20), 420);
});

const LONG = ['vanilla', 'ReAct', 'Self-Refine', 'prompted editor (teacher)', 'engineer, SFT only', 'engineer, SFT+GRPO (Harness-R1)', 'a registered method with a very long label that needs a row of its own'];
const iv = { mean: 0.5, lo: 0.4, hi: 0.6, n: 10 };

test('plots - legend labels are never cut: every label whole, inside the chart, none running into the next', (t) => {
  for (const cats of [['ALFWorld'], ['ALFWorld', 'average'], ['ALFWorld success', 'WebShop score', 'WebShop success', 'DBBench success', 'average']]) {
    const svg = barChart({ title: 'legend', categories: cats, series: LONG.map((name) => ({ name, values: cats.map(() => iv) })) });
    t.deepEqual(legendProblems(svg, LONG), [], `${cats.length} categories`);
    // the chart grew to hold more rows of legend, not squeezed them
    t.true(svgSize(svg).height > 420);
  }
  const panels = panelChart({ title: 'panels', panels: [{ title: 'a', x: [1, 2], series: LONG.map((name) => ({ name, values: [1, 2] })) }] });
  t.deepEqual(legendProblems(panels, LONG), []);
});

test('plots - the legend check finds a cut label and an overlapped one (ECharts measured DejaVu Sans too narrow)', (t) => {
  const four = LONG.slice(0, 4);
  const svg = barChart({ title: 'x', categories: ['a'], series: four.map((name) => ({ name, values: [iv] })) });
  t.deepEqual(legendProblems(svg, four), []);
  const moved = (x: (y: string, prev: LegendItem) => string) => {
    const items = legendItems(svg);
    const prev = items[items.findIndex((it) => it.label === 'prompted editor (teacher)') - 1]!;
    return svg.replace(/transform="translate\(([-\d.]+) ([-\d.]+)\)"([^>]*)>prompted editor/, (_m, _x, y: string, rest: string) => `transform="translate(${x(y, prev)} ${y})"${rest}>prompted editor`);
  };
  t.regex(legendProblems(moved(() => '600'), four).join('\n'), /"prompted editor \(teacher\)" runs past the chart/);
  t.regex(legendProblems(moved((_y, prev) => String(prev.x + 20)), four).join('\n'), /runs into "prompted editor \(teacher\)"/);
});

test('plots - a method has one colour in every chart, whatever else the chart shows', (t) => {
  const a = barChart({ title: 'all', categories: ['x'], series: ['vanilla', 'react', 'prompted-editor', 'my-engineer'].map((m) => ({ name: m, method: m, values: [iv] })) });
  const b = barChart({ title: 'Δ, no vanilla', categories: ['x', 'y'], series: ['prompted-editor', 'my-engineer'].map((m) => ({ name: m, method: m, values: [iv, iv] })) });
  const colours = (svg: string) => Object.fromEntries(legendItems(svg).map((it) => [it.label, it.colour]));
  const ca = colours(a);
  const cb = colours(b);
  t.is(ca['prompted-editor'], cb['prompted-editor']);
  t.is(ca['my-engineer'], cb['my-engineer']);
  t.is(ca['prompted-editor'], methodColour('prompted-editor'));
  t.is(ca.vanilla, METHOD_COLOURS.vanilla);
  t.not(ca['my-engineer'], ca['prompted-editor']);
  // a name no table knows hashes to the same colour every time
  t.is(methodColour('my-engineer'), methodColour('my-engineer'));
});

test('plots - category labels wrap to fit their band instead of being dropped', (t) => {
  t.is(wrapLabel('pick clean then place in recep', 120), 'pick clean then\nplace in recep');
  t.is(wrapLabel('short', 120), 'short');
});

test('plots - drawn by ECharts\' one-file CommonJS build, loaded on the first chart: the same SVG as its ES build draws', async (t) => {
  const { charting } = await import('../../../experiments/report/charting.ts');
  const { stableIds } = await import('../../../experiments/report/plots.ts');
  const es = await import('echarts');
  const cjs = charting().echarts;
  t.not(cjs as unknown, es as unknown, 'two builds, not one module twice');
  t.is(cjs.version, es.version);
  const option = { animation: false, title: { text: 'both builds' }, xAxis: { type: 'category', data: ['a', 'b'] }, yAxis: { type: 'value' }, series: [{ type: 'bar', data: [0.4, 0.7] }] };
  const draw = (e: typeof es) => {
    const chart = e.init(null, null, { renderer: 'svg', ssr: true, width: 400, height: 300 });
    chart.setOption(option);
    const svg = chart.renderToSVGString();
    chart.dispose();
    // each build counts its own element ids: the charts' stable ids (as every chart gets)
    return stableIds(svg);
  };
  t.is(draw(cjs), draw(es));
  t.regex(draw(cjs), /both builds/);
});
