import ArgumentParser
import Peerlog
import PeerlogEncoding

/// The arguments every merging write shares: the key, an optional condition on it, how values
/// parse, `--wait` and `--json`.
struct MergeWriteOptions: ParsableArguments {
    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @Argument(help: "The entity key.") var key: String
    @OptionGroup var conditions: ConditionOptions
    @Flag(help: "Parse values (and --if-value) as JSON; otherwise they are strings.") var jsonValue = false
    @OptionGroup var wait: WaitOptions
    @OptionGroup var output: OutputOptions

    /// Writes the transaction `build` fills (after the condition, if any) and reports its outcome.
    func write(summary: String, _ build: (inout PeerlogTransaction) throws -> Void) async throws {
        var t = PeerlogTransaction()
        let condition = try conditions.condition(json: jsonValue)
        if let condition { t.require(key, condition) }
        try build(&t)
        let (peerlog, id) = try await home.open(group)
        let result = try await peerlog.write(t, in: id)
        try await reportOutcome(
            result, peerlog: peerlog, group: id, summary: summary + (condition.map { " if \($0.text)" } ?? ""),
            wait: wait, json: output.json)
    }

    func values(_ texts: [String], what: String) throws -> [CBOR] {
        try texts.map { try parseValue($0, json: jsonValue, what: what) }
    }
}

private let mergeDiscussion = """
    Applied at the write's committed position, by every replica the same way: concurrent writes from \
    several devices all count. Exit status 3 when the write is rejected at commit (a condition failed, or the \
    key holds a value of another kind), 4 when --wait --timeout passes first; docs/PROTOCOL.md §9.7.
    """

/// `peerlog incr GROUP KEY [--by N]`: a counter.
struct Incr: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "incr",
        abstract: "Add to a counter (absent counts as 0); concurrent adds all count.", discussion: mergeDiscussion)
    @OptionGroup var options: MergeWriteOptions
    @Option(parsing: .unconditional, help: "The amount, negative to subtract (default 1).") var by: Int64 = 1

    func run() async throws {
        try await options.write(summary: "Added \(by) to \"\(options.key)\"") { $0.add(options.key, by) }
    }
}

/// The elements `set-add` and `set-remove` take, and the write they make.
struct SetElements: ParsableArguments {
    @Argument(help: "The elements.") var elements: [String]

    func validate() throws {
        if elements.isEmpty { throw ValidationError("give at least one element") }
    }

    func write(_ options: MergeWriteOptions, removing: Bool) async throws {
        let values = try options.values(elements, what: "ELEMENT")
        let summary =
            removing
            ? "Removed \(values.count) element(s) from \"\(options.key)\""
            : "Added \(values.count) element(s) to \"\(options.key)\""
        try await options.write(summary: summary) {
            if removing {
                $0.remove(cbor: values, from: options.key)
            } else {
                $0.insert(cbor: values, into: options.key)
            }
        }
    }
}

/// `peerlog set-add GROUP KEY ELEMENT...`: a set.
struct SetAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-add",
        abstract: "Add elements to a set (an array of distinct values); concurrent additions all stay.",
        discussion: mergeDiscussion)
    @OptionGroup var options: MergeWriteOptions
    @OptionGroup var set: SetElements

    func run() async throws { try await set.write(options, removing: false) }
}

/// `peerlog set-remove GROUP KEY ELEMENT...`.
struct SetRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-remove", abstract: "Remove elements from a set.", discussion: mergeDiscussion)
    @OptionGroup var options: MergeWriteOptions
    @OptionGroup var set: SetElements

    func run() async throws { try await set.write(options, removing: true) }
}

/// `peerlog merge GROUP KEY NAME=VALUE... [--remove NAME]...`: fields of a record.
struct Merge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Set or remove fields of a record (a map), keeping its other fields.",
        discussion: "Concurrent changes to different fields all stay. " + mergeDiscussion)
    @OptionGroup var options: MergeWriteOptions
    @Argument(help: "Fields to set, NAME=VALUE.") var fields: [String] = []
    @Option(name: .customLong("remove"), help: ArgumentHelp("A field to remove (repeatable).", valueName: "name"))
    var removals: [String] = []

    func validate() throws {
        if fields.isEmpty && removals.isEmpty {
            throw ValidationError("give NAME=VALUE fields to set or --remove NAME")
        }
    }

    func run() async throws {
        var set = [String: CBOR]()
        for field in fields {
            guard let eq = field.firstIndex(of: "="), eq != field.startIndex else {
                throw CLIError("\(field): a field is NAME=VALUE")
            }
            let name = String(field[..<eq])
            set[name] = try parseValue(String(field[field.index(after: eq)...]), json: options.jsonValue, what: name)
        }
        try await options.write(summary: "Merged \(set.count + removals.count) field(s) of \"\(options.key)\"") {
            if !set.isEmpty { $0.setFields(cbor: set, of: options.key) }
            if !removals.isEmpty { $0.removeFields(removals, of: options.key) }
        }
    }
}
