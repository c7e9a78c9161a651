import Peerlog

/// One to-do item, stored as a Peerlog entity (`item/<number>-<device>`).
struct Item: Codable, Equatable {
    var text: String
    var done: Bool
}

/// The app: reads commands from standard input, prints the current list whenever it changes.
actor NotesApp {
    let peerlog: Peerlog
    let options: NotesOptions
    /// The list shown and written to.
    var current: GroupID?

    init(_ options: NotesOptions) async throws {
        self.options = options
        peerlog = try await Peerlog.open(home: options.home, deviceName: options.name)
    }

    func run() async throws {
        say("identity: \(peerlog.identity)")
        say("device: \(peerlog.deviceName)")
        current = try await peerlog.groups().first { $0.role != nil }?.id
        let changes = peerlog.changes()
        let network = Task { [peerlog, options] in
            do {
                try await peerlog.run(options.network) { address in
                    Task { await self.say("listening on \(address?.description ?? "nothing (dial only)")") }
                }
            } catch {
                self.say("network: \(error)")
            }
        }
        let watcher = Task { try await self.watch(changes) }
        try await show()
        while let line = await Self.readLine() {
            if try await !handle(line) { break }
        }
        watcher.cancel()
        network.cancel()
        _ = await network.result
    }

    /// Reads a line without blocking the actor.
    static func readLine() async -> String? {
        await Task.detached { Swift.readLine() }.value
    }

    // MARK: Changes

    func watch(_ changes: PeerlogChanges) async throws {
        for try await change in changes {
            switch change.event {
            case .invited(let group, _):
                let name = try await peerlog.group(group)?.name ?? group.description
                say("invited to \(name) (\(group)): type `accept`")
            case .reordered(let group, let keys) where group == current:
                say(
                    "! reordered: \(keys.joined(separator: ", ")) changed: the sequencer ordered writes differently than guessed"
                )
            case .entity(let e) where e.group == current:
                try await show()
            case .committed(let group, _) where group == current:
                break  // entity changes already showed what turned committed
            case .rejected(let group, _, let reason) where group == current:
                say("! a write was rejected: \(reason)")
            case .groupDeleted(let group) where group == current:
                say("this list was deleted")
                current = nil
            default:
                break
            }
        }
    }

    // MARK: Commands

    /// Runs one command; false to quit.
    func handle(_ line: String) async throws -> Bool {
        let words = line.split(separator: " ", maxSplits: 1).map(String.init)
        guard let command = words.first else { return true }
        let argument = words.count > 1 ? words[1] : ""
        do {
            switch command {
            case "quit", "exit": return false
            case "help": say(Self.help)
            case "id": say("identity: \(peerlog.identity)")
            case "lists": try await lists()
            case "new":
                current = try await peerlog.createGroup(named: argument.isEmpty ? "notes" : argument)
                say("created list \(argument) (\(current!))")
            case "use":
                current = try await peerlog.group(argument).id
                try await show()
            case "invite":
                try await peerlog.invite(try IdentityID(string: argument), to: try list())
                say("invited \(argument)")
            case "accept": try await accept()
            case "add": try await add(argument)
            case "done", "undo": try await mark(argument, done: command == "done")
            case "claim": try await claim(argument)
            case "rm": try await peerlog.delete(try itemKey(argument), in: try list())
            case "show": try await show()
            default: say("unknown command \(command) (type help)")
            }
        } catch {
            say("error: \(error)")
        }
        return true
    }

    static let help = """
        lists | new NAME | use NAME | invite IDENTITY | accept | add TEXT | done N | undo N | claim N | rm N | show | id | quit
        items marked (tentative) are not ordered by the list's sequencer yet; an item is claimed by one person only
        """

    func list() throws -> GroupID {
        guard let current else { throw NotesError("no list yet: `new NAME`, or `accept` an invitation") }
        return current
    }

    func lists() async throws {
        for g in try await peerlog.groups() {
            say(
                "\(g.id == current ? "*" : " ") \(g.name)  \(g.id)  \(g.isInvitation ? "invitation" : "\(g.memberCount) member(s)")"
            )
        }
    }

    func accept() async throws {
        guard let invitation = try await peerlog.invitations().first else { throw NotesError("no pending invitation") }
        try await peerlog.acceptInvitation(to: invitation.id)
        current = invitation.id
        say("joined \(invitation.name)")
        try await show()
    }

    func add(_ text: String) async throws {
        let group = try list()
        let number = try await peerlog.keys(in: group, prefix: "item/").count + 1
        // Numbered so the list keeps its order; the device suffix keeps two laptops' items apart.
        let digits = String(number)
        let key =
            "item/" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits + "-"
            + String(peerlog.deviceID.description.prefix(12))
        try await peerlog.put(key, Item(text: text, done: false), in: group)
    }

    func mark(_ n: String, done: Bool) async throws {
        let group = try list()
        let key = try itemKey(n)
        guard var item = try await peerlog.get(key, as: Item.self, in: group) else { throw NotesError("no item \(n)") }
        item.done = done
        try await peerlog.put(key, item, in: group)
    }

    /// Claims item `n` for this device's person: a conditional write ("only if nobody has"),
    /// decided where the list's sequencer orders it, so of two people claiming at once (or
    /// offline) exactly one gets it, on every laptop. The other hears why (`.rejected`).
    func claim(_ n: String) async throws {
        let group = try list()
        let key = "claim/" + (try itemKey(n)).dropFirst("item/".count)
        let write = try await peerlog.put(key, peerlog.deviceName, in: group, if: .absent)
        switch try await peerlog.outcome(of: write) {
        case .committed: say("claimed \(n)")
        case .rejected(_, let reason): say("! \(n) is taken: \(reason)")
        case .pending(nil): say("claimed \(n) (tentative until the list's sequencer orders it)")
        case .pending(let guess?): say("! \(n) looks taken: \(guess)")
        }
        try await show()
    }

    func itemKey(_ n: String) throws -> String {
        guard let i = Int(n), i >= 1 else { throw NotesError("give an item number (see `show`)") }
        let keys = shownKeys
        guard i <= keys.count else { throw NotesError("no item \(i)") }
        return keys[i - 1]
    }

    /// The keys as last shown, so `done N` means the N the user saw.
    private var shownKeys: [String] = []

    func show() async throws {
        guard let group = current, let info = try await peerlog.group(group) else {
            return say("(no list: `new NAME`, or wait for an invitation)")
        }
        let entries = try await peerlog.entries(in: group, prefix: "item/")
        var claims = [String: String]()
        for c in try await peerlog.entries(in: group, prefix: "claim/") {
            claims["item/" + c.key.dropFirst("claim/".count)] = try c.decode(String.self)
        }
        shownKeys = entries.map(\.key)
        var lines = ["-- \(info.name) (\(entries.count) item\(entries.count == 1 ? "" : "s")) --"]
        for (i, e) in entries.enumerated() {
            let item = try e.decode(Item.self)
            let claim = claims[e.key].map { "  @\($0)" } ?? ""
            lines.append(
                "\(i + 1). [\(item.done ? "x" : " ")] \(item.text)\(claim)\(e.isTentative ? "  (tentative)" : "")")
        }
        say(lines.joined(separator: "\n"))
    }

    func say(_ text: String) { writeLine(text) }
}

struct NotesError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
