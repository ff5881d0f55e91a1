import test from 'ava';
import { reproducibleBlasEnv } from '../../../learner/index.ts';

const AVX2 = 'processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n';
const OLD = 'processor\t: 0\nflags\t\t: fpu sse2 avx\n';
const ONE = { OPENBLAS_NUM_THREADS: '1' };

test('blas env - Haswell kernels on x86-64 with AVX2; nothing without AVX2, on arm64, unreadable cpuinfo, or a user choice', (t) => {
  t.deepEqual(reproducibleBlasEnv({}, 'x64', () => AVX2), { ...ONE, OPENBLAS_CORETYPE: 'Haswell' });
  t.deepEqual(reproducibleBlasEnv({}, 'x64', () => OLD), ONE);
  t.deepEqual(reproducibleBlasEnv({}, 'arm64', () => AVX2), ONE);
  t.deepEqual(reproducibleBlasEnv({ OPENBLAS_CORETYPE: 'Zen' }, 'x64', () => AVX2), ONE);
  t.deepEqual(reproducibleBlasEnv({}, 'x64', () => { throw new Error('no /proc'); }), ONE);
  // "avx2" only counts on the flags line, as a whole word
  t.deepEqual(reproducibleBlasEnv({}, 'x64', () => 'model name\t: avx2 box\nflags\t\t: avx512x\n'), ONE);
});

test('blas env - OpenBLAS gets as many threads as torch (HR1_TORCH_THREADS, default 1) on every platform; a user-set OPENBLAS_NUM_THREADS wins', (t) => {
  t.deepEqual(reproducibleBlasEnv({ HR1_TORCH_THREADS: '4' }, 'arm64', () => AVX2), { OPENBLAS_NUM_THREADS: '4' });
  t.deepEqual(reproducibleBlasEnv({ OPENBLAS_NUM_THREADS: '2' }, 'arm64', () => AVX2), {});
  t.deepEqual(reproducibleBlasEnv({ OPENBLAS_NUM_THREADS: '2', HR1_TORCH_THREADS: '4' }, 'x64', () => AVX2), { OPENBLAS_CORETYPE: 'Haswell' });
});
