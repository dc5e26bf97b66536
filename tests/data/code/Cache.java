package org.example.cache;

import java.util.HashMap;
import java.util.Map;

/** A simple cache. */
@SuppressWarnings("unchecked")
public class Cache<K, V> {
    private final Map<K, V> items = new HashMap<>();

    public Cache() {
    }

    /** Fetch a value safely. */
    @Override
    public V safeFetch(K key) {
        return items.get(key);
    }

    static class Entry {
        int hits;

        void touch() {
            hits++;
        }
    }
}

interface Store {
    void put(String key);
}

enum Mode {
    FAST,
    SLOW;
}
