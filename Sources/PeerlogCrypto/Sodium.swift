import CSodium

/// libsodium must be initialised once before use; every entry point calls `Sodium.ensureInitialized()`.
enum Sodium {
    private static let initialized: Bool = sodium_init() >= 0

    static func ensureInitialized() {
        precondition(initialized, "libsodium failed to initialise")
    }
}
