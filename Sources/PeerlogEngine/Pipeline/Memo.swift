/// A per-transaction cache: the first lookup of a key runs the query, later ones read its
/// answer (an optional answer too: "not there" is remembered). Writes through the subscript
/// keep it true when the transaction itself changes what the query would say.
struct Memo<Key: Hashable, Value> {
    private var values: [Key: Value] = [:]

    /// The answer for `key`, asking `load` only the first time.
    mutating func value(_ key: Key, _ load: (Key) throws -> Value) rethrows -> Value {
        if let known = values[key] { return known }
        let loaded = try load(key)
        values[key] = loaded
        return loaded
    }

    subscript(key: Key) -> Value? {
        get { values[key] }
        set { values[key] = newValue }
    }

    subscript(key: Key, default value: @autoclosure () -> Value) -> Value {
        get { values[key] ?? value() }
        set { values[key] = newValue }
    }
}
