/** `hr1 patch check` and `hr1 patch show`. */

/** `hr1 patch check <file>`: print the report; non-zero exit when the patch is invalid. */
export async function patchCheck(file: string): Promise<void> {
  const { checkPatchFile } = await import('../../harness/index.ts');
  const r = await checkPatchFile(file);
  console.log(r.report);
  if (!r.ok) process.exitCode = 1;
}

/** `hr1 patch show <file>`: the canonical form and the content hash. */
export async function patchShow(file: string): Promise<void> {
  const { showPatchFile } = await import('../../harness/index.ts');
  const r = showPatchFile(file);
  console.log(r.canonical);
  console.log(`hash ${r.hash}`);
}
