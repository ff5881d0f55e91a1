// minimal typings for the two wink packages the WebShop env uses (neither ships its own)
declare module 'wink-bm25-text-search' {
  interface BM25Engine {
    defineConfig(cfg: { fldWeights: Record<string, number>; bm25Params?: { k1?: number; b?: number; k?: number }; ovFldNames?: string[] }): boolean;
    definePrepTasks(tasks: Array<(x: any) => any>, field?: string): number;
    addDoc(doc: Record<string, string>, id: string | number): number;
    consolidate(fp?: number): boolean;
    search(text: string, limit?: number): Array<[string, number]>;
    getTotalDocs(): number;
  }
  const bm25: () => BM25Engine;
  export default bm25;
}
declare module 'wink-nlp-utils/src/string-stem.js' {
  /** Porter2: the stem of one lowercase word */
  const stem: (word: string) => string;
  export default stem;
}
