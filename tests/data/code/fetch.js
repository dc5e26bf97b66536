import { readFile } from "node:fs/promises";

const RETRIES = 3;

/**
 * Fetch with retries.
 */
export async function safeFetch(url, options = {}) {
  for (let i = 0; i < RETRIES; i++) {
    try {
      return await fetch(url, options);
    } catch (err) {
      console.warn(err);
    }
  }
  return null;
}

// Arrow functions bound to constants are functions too.
const parseJson = (text) => JSON.parse(text);

class Cache {
  constructor() {
    this.store = new Map();
  }

  // Look a key up.
  get(key) {
    return this.store.get(key);
  }

  static create() {
    return new Cache();
  }
}

function größe(x) {
  return x.length;
}

export default Cache;
