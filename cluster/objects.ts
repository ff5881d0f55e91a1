import type { NatsConnection, ObjectStore as NatsOS } from 'nats';
import { createHash } from 'node:crypto';
import { Hr1Error, ObjectNotFoundError, type ClusterErrorCode } from './errors.ts';

export interface ObjectInfo {
  name: string;
  size: number;
  /** `sha256=<hex>` of the bytes. */
  digest: string;
}

/**
 * Large blobs (engineer weights, catalogs) travel through here, not through messages: put once,
 * pass the name in a message, get where needed. JetStream's object store over NATS, a map in-process.
 */
export interface ObjectStore {
  readonly kind: 'memory' | 'jetstream';
  put(name: string, data: Uint8Array): Promise<ObjectInfo>;
  /** Rejects with {@link ObjectNotFoundError} when there is no such object. */
  get(name: string): Promise<Uint8Array>;
  info(name: string): Promise<ObjectInfo | undefined>;
  delete(name: string): Promise<boolean>;
  list(): Promise<ObjectInfo[]>;
}

function sha(data: Uint8Array): string {
  return `sha256=${createHash('sha256').update(data).digest('hex')}`;
}

function checkName(name: string): void {
  if (!/^[A-Za-z0-9_.\/=-]{1,200}$/.test(name)) throw new Hr1Error<ClusterErrorCode>('BAD_OBJECT_NAME', `object name "${name}" is not allowed; use letters, digits and _ . / = - (at most 200)`, { data: { name } });
}

/** In-process store: a map of copies. */
export class MemoryObjectStore implements ObjectStore {
  readonly kind = 'memory' as const;
  private m = new Map<string, { data: Uint8Array; info: ObjectInfo }>();

  async put(name: string, data: Uint8Array): Promise<ObjectInfo> {
    checkName(name);
    const info = { name, size: data.byteLength, digest: sha(data) };
    this.m.set(name, { data: data.slice(), info });
    return info;
  }
  async get(name: string): Promise<Uint8Array> {
    const e = this.m.get(name);
    if (!e) throw new ObjectNotFoundError(`no object "${name}" in the in-process object store; put() it first`, { data: { name } });
    return e.data.slice();
  }
  async info(name: string): Promise<ObjectInfo | undefined> {
    return this.m.get(name)?.info;
  }
  async delete(name: string): Promise<boolean> {
    return this.m.delete(name);
  }
  async list(): Promise<ObjectInfo[]> {
    return [...this.m.values()].map((e) => e.info).sort((a, b) => a.name.localeCompare(b.name));
  }
}

/** JetStream object store (bucket `hr1_<cluster>`); the server must run with JetStream (`-js`). */
export class JetStreamObjectStore implements ObjectStore {
  readonly kind = 'jetstream' as const;
  private os: Promise<NatsOS> | undefined;

  constructor(private readonly nc: NatsConnection, readonly bucket: string) {}

  private store(): Promise<NatsOS> {
    this.os ??= this.nc
      .jetstream()
      .views.os(this.bucket)
      .catch((e: unknown) => {
        this.os = undefined;
        throw new Hr1Error<ClusterErrorCode>('OBJECT_STORE_UNAVAILABLE', `cannot open the JetStream object store "${this.bucket}": ${(e as Error).message}; start nats-server with JetStream enabled (-js)`, { cause: e });
      });
    return this.os;
  }

  async put(name: string, data: Uint8Array): Promise<ObjectInfo> {
    checkName(name);
    const os = await this.store();
    await os.putBlob({ name }, data);
    return { name, size: data.byteLength, digest: sha(data) };
  }
  async get(name: string): Promise<Uint8Array> {
    const os = await this.store();
    const d = await os.getBlob(name);
    if (d === null) throw new ObjectNotFoundError(`no object "${name}" in JetStream bucket ${this.bucket}; put() it first`, { data: { name, bucket: this.bucket } });
    return d;
  }
  async info(name: string): Promise<ObjectInfo | undefined> {
    const os = await this.store();
    const i = await os.info(name);
    if (!i || i.deleted) return undefined;
    return { name: i.name, size: i.size, digest: i.digest };
  }
  async delete(name: string): Promise<boolean> {
    const os = await this.store();
    const i = await os.info(name);
    if (!i || i.deleted) return false;
    await os.delete(name);
    return true;
  }
  async list(): Promise<ObjectInfo[]> {
    const os = await this.store();
    const all = await os.list();
    return all.filter((i) => !i.deleted).map((i) => ({ name: i.name, size: i.size, digest: i.digest })).sort((a, b) => a.name.localeCompare(b.name));
  }
}
