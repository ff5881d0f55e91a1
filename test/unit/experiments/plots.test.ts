import test from 'ava';
import { barChart, heatmap, svgToPng } from '../../../experiments/report/index.ts';

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
