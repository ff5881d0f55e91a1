import test from 'ava';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadWebshop, loadVendored, PyRandom, splitOf, priceLimitOf, pyFloat, parsePriceTag, reset, step, expert, WebshopError, verifyWebshop, type WebshopErrorCode } from '../../../envs/webshop/index.ts';

test('vendored data - 1,468 products (502 with item pages), 179 goals split 91/49/39, every target in the catalog', (t) => {
  const env = loadWebshop();
  t.is(env.products.length, 1468);
  t.is(env.products.filter((p) => p.optionsKnown).length, 502);
  t.is(env.goals.length, 179);
  for (const g of env.goals) {
    t.true(env.byAsin.has(g.asin));
    t.is(g.split, splitOf(g.id));
    t.is(g.priceUpper, priceLimitOf(g.instruction));
    t.true(env.byAsin.get(g.asin)!.price <= g.priceUpper);
    for (const v of Object.values(g.goalOptions)) t.true(Object.values(env.byAsin.get(g.asin)!.options).some((vs) => vs.includes(v)));
  }
});

test('splits - deterministic by id hash', (t) => {
  t.is(splitOf('fixed_1'), splitOf('fixed_1'));
  const c = { train: 0, dev: 0, test: 0 };
  for (let i = 0; i < 2000; i++) c[splitOf(`fixed_${i}`)]++;
  t.true(c.train > 1100 && c.train < 1300 && c.dev > 320 && c.test > 320);
});

test('PyRandom - matches CPython random.seed(233) + shuffle (the order WebShop gives its goals)', (t) => {
  // python3 -c "import random; random.seed(233); l=list(range(20)); random.shuffle(l); print(l)"
  t.deepEqual(new PyRandom(233).shuffle([...Array(20).keys()]), [17, 18, 9, 2, 8, 19, 11, 10, 12, 0, 3, 4, 14, 13, 1, 6, 15, 7, 16, 5]);
  t.deepEqual(new PyRandom(233).shuffle([...Array(12087).keys()]).slice(0, 8), [8655, 10304, 6940, 2750, 3667, 2144, 3577, 9548]);
  t.is(new PyRandom(233).nextU32(), 2931216007);
});

test('python float and price tags as engine.py prints them', (t) => {
  t.is(pyFloat(100), '100.0');
  t.is(pyFloat(9.98), '9.98');
  t.deepEqual(parsePriceTag('$10.99 to $20.99'), [10.99, 20.99]);
  t.deepEqual(parsePriceTag('$1,299.00'), [1299]);
});

function upstreamDir(products: unknown, attrs: unknown = {}, human: unknown = {}, names = ['items_shuffle_1000.json', 'items_ins_v2_1000.json', 'items_human_ins.json']): string {
  const d = mkdtempSync(join(tmpdir(), 'webshop-'));
  const write = (n: string | undefined, v: unknown) => n && writeFileSync(join(d, n), typeof v === 'string' ? v : JSON.stringify(v));
  write(names[0], products);
  write(names[1], attrs);
  write(names[2], human);
  return d;
}
const P = (asin: string, name: string, extra: Record<string, unknown> = {}) => ({
  asin,
  name,
  full_description: `About ${name}`,
  small_description: [`${name} bullet`],
  pricing: '$12.50',
  customization_options: null,
  category: 'beauty',
  query: ' Hair Extensions ',
  product_category: 'Beauty › Hair › Extensions',
  images: ['x.jpg'],
  ...extra,
});

test('upstream loader - reads WebShop items_* files as load_products and get_human_goals do', (t) => {
  const products = [
    P('B000000001', 'Clip In Hair Extension Natural Black', {
      pricing: '$9.99 - $19.99',
      customization_options: { Color: [{ value: 'Natural Black/Brown', image: null }, { value: ' Blonde ' }], Size: null },
    }),
    P('B000000002', 'USB Microphone Noise Cancelling'),
    P('B000000003', 'Ceramic Coffee Mug'),
    P('B000000002', 'duplicate dropped'),
    P('nan', 'dropped'),
  ];
  const attrs = { B000000001: { attributes: ['natural looking', 'clip in'] } };
  const human = {
    B000000001: [
      { instruction: 'i need a natural black clip in hair extension.', instruction_attributes: ['natural looking'], instruction_options: { color: 'natural black | brown' } },
      { instruction: 'no attributes: skipped', instruction_attributes: [], instruction_options: {} },
    ],
    B000000002: [{ instruction: 'a usb microphone', instruction_attributes: ['noise cancelling'], instruction_options: [] }],
  };
  const dir = upstreamDir(products, attrs, human);
  try {
    const env = loadWebshop({ dataDir: dir });
    t.is(env.products.length, 3);
    const p = env.byAsin.get('B000000001')!;
    t.deepEqual(p.options, { color: ['natural black | brown', 'blonde'] });
    t.is(p.priceTag, '$9.99 to $19.99');
    t.true(p.price >= 9.99 && p.price <= 19.99);
    t.is(p.query, 'hair extensions');
    t.deepEqual(p.attributes, ['natural looking', 'clip in']);
    t.deepEqual(env.byAsin.get('B000000002')!.attributes, ['DUMMY_ATTR']);
    t.is(env.goals.length, 2);
    t.deepEqual(env.goals.map((g) => g.id), ['fixed_0', 'fixed_1']);
    t.true(env.goals.every((g) => g.split === 'test'));
    const g = env.goals.find((x) => x.asin === 'B000000001')!;
    t.regex(g.instruction, /^i need a natural black clip in hair extension, and price lower than \d+\.00 dollars$/);
    t.true(g.priceUpper > p.price && g.priceUpper % 10 === 0);
    // the env runs on it: the expert buys with reward 1 (attributes match by title/description)
    let { state } = reset(env, g.id);
    while (!state.done) state = step(env, state, expert(env, state)!).state;
    t.is(state.reward, 1);
    t.true(verifyWebshop({ dataDir: dir }).ok);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bad data - typed errors that name the file, the field and the fix', (t) => {
  const cases: [string, () => string, WebshopErrorCode, RegExp][] = [
    ['missing dir', () => '/nonexistent/webshop-data', 'WEBSHOP_MISSING_FILE', /does not exist/],
    ['no products file', () => upstreamDir(undefined, {}, {}, ['', 'items_ins_v2.json', 'items_human_ins.json']), 'WEBSHOP_MISSING_FILE', /items_shuffle\.json, items_shuffle_1000\.json/],
    ['invalid JSON', () => upstreamDir('{oops'), 'WEBSHOP_BAD_DATA', /not valid JSON.*items_shuffle_1000\.json/],
    ['not an array', () => upstreamDir({}), 'WEBSHOP_BAD_DATA', /JSON array of products.*field <root>/],
    ['no name', () => upstreamDir([{ asin: 'B1' }]), 'WEBSHOP_BAD_DATA', /has no name.*field \[0\]\.name/],
    ['bad option', () => upstreamDir([P('B1', 'a', { customization_options: { size: [{ val: 1 }] } }), P('B2', 'b'), P('B3', 'c')]), 'WEBSHOP_BAD_DATA', /field \[0\]\.customization_options\.size\[0\]\.value/],
    ['too few products', () => upstreamDir([P('B1', 'a')]), 'WEBSHOP_BAD_DATA', /at least 3/],
    ['bad attributes', () => upstreamDir([P('B1', 'a'), P('B2', 'b'), P('B3', 'c')], { B1: { attributes: [] } }, { B1: [{ instruction: 'x', instruction_attributes: 'y' }] }), 'WEBSHOP_BAD_DATA', /items_human_ins\.json, field B1\[0\]\.instruction_attributes/],
  ];
  for (const [name, mk, code, msg] of cases) {
    const dir = mk();
    try {
      const e = t.throws(() => loadWebshop({ dataDir: dir }), undefined, name) as WebshopError;
      t.true(e instanceof WebshopError, name);
      t.is(e.code, code, name);
      t.regex(e.message, msg, name);
    } finally {
      if (dir.startsWith(tmpdir())) rmSync(dir, { recursive: true, force: true });
    }
  }
  const d = mkdtempSync(join(tmpdir(), 'webshop-'));
  writeFileSync(join(d, 'products.json'), JSON.stringify({ format: 'other' }));
  writeFileSync(join(d, 'goals.json'), '[]');
  const e = t.throws(() => loadVendored(d)) as WebshopError;
  t.is(e.code, 'WEBSHOP_BAD_DATA');
  t.regex(e.message, /rebuild with envs\/webshop\/scripts\/build-data\.ts.*products\.json, field format/);
  rmSync(d, { recursive: true, force: true });
});

test('bad options - unknown goal and bad protocol are typed errors', (t) => {
  const env = loadWebshop();
  t.is((t.throws(() => reset(env, 'fixed_99999')) as WebshopError).code, 'WEBSHOP_UNKNOWN_GOAL');
  t.regex((t.throws(() => reset(env, 'fixed_1', { protocol: 'x' as never })) as WebshopError).message, /opts\.protocol must be one of react/);
  t.is((t.throws(() => reset(env, 'fixed_1', { maxSteps: 0 })) as WebshopError).code, 'WEBSHOP_BAD_OPTION');
});
