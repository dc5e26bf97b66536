import Foundation

let defaultTimeout: TimeInterval = 30

/// Fetches data with retries.
@MainActor
final class SafeFetcher {
    var attempts = 0

    /// Loads one URL.
    func safeFetch(_ url: URL) async throws -> Data {
        attempts += 1
        return try await URLSession.shared.data(from: url).0
    }

    struct Config {
        var retries: Int = 3
        func describe() -> String { "retries \(retries)" }
    }
}

extension SafeFetcher {
    func reset() { attempts = 0 }
}

protocol Cache {
    func value(for key: String) -> Data?
}

enum Mode { case fast, slow }

actor Counter {
    private var count = 0
    func increment() -> Int { count += 1; return count }
}

func größe(of data: Data) -> Int { data.count }
