/**
 * ECharts and resvg, loaded on the first chart drawn rather than when a module that can draw one is
 * imported. ECharts' ES build is ~600 modules (with zrender): loaded eagerly, every `hr1 exp …`
 * process (and every process that imports an experiment) loaded them before checking its options
 * (an option error: 5.0 CPU-s before this and WebShop's stemmer-only import, 2.0 after). Its
 * CommonJS build is one file of the same release, required here synchronously so the chart functions
 * stay synchronous; the SVG it renders is the same byte for byte (test/unit/experiments/plots.test.ts).
 */
import { createRequire } from 'node:module';

type Charting = { echarts: typeof import('echarts'); Resvg: typeof import('@resvg/resvg-js').Resvg };

const require = createRequire(import.meta.url);
let loaded: Charting | undefined;

export function charting(): Charting {
  loaded ??= { echarts: require('echarts') as typeof import('echarts'), Resvg: (require('@resvg/resvg-js') as typeof import('@resvg/resvg-js')).Resvg };
  return loaded;
}
