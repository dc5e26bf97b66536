//! A small library.

use std::collections::HashMap;

const LIMIT: usize = 10;

/// A cache of values.
#[derive(Debug, Default)]
pub struct Cache {
    items: HashMap<String, u32>,
}

impl Cache {
    /// Make an empty cache.
    pub fn new() -> Self {
        Cache { items: HashMap::new() }
    }

    pub fn safe_fetch(&self, key: &str) -> Option<u32> {
        self.items.get(key).copied()
    }
}

pub trait Store {
    fn put(&mut self, key: &str, value: u32);
}

impl Store for Cache {
    fn put(&mut self, key: &str, value: u32) {
        self.items.insert(key.to_string(), value);
    }
}

pub enum Mode {
    Fast,
    Slow,
}

mod inner {
    pub fn helper() -> u32 {
        42
    }
}

fn größe(s: &str) -> usize {
    s.len()
}
