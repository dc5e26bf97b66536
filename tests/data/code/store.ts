import type { Readable } from "stream";

export const VERSION = "1.0";

/** A key-value record. */
export interface Entry {
  key: string;
  value: number;
}

export type Key = string | number;

export enum Color {
  Red,
  Green,
}

@sealed
export class Store<T> {
  private items: Map<string, T> = new Map();

  /** Put one item. */
  put(key: string, item: T): void {
    this.items.set(key, item);
  }

  get size(): number {
    return this.items.size;
  }
}

export function makeStore<T>(): Store<T> {
  return new Store<T>();
}

namespace Util {
  export function clamp(x: number): number {
    return Math.max(0, Math.min(1, x));
  }
}
