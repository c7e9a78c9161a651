import PeerlogModel
import Synchronization

/// Memory that partial (fragmented, incomplete) application messages may hold, shared by all
/// connections of a node: `totalBytes` in all, `perIdentityBytes` for the devices of one
/// identity together (docs/PROTOCOL.md §14.7). Without it every connection could hold
/// `maxMessageBytes` while its fragments trickle in, and connections are cheap to open.
public final class ReassemblyBudget: Sendable {
    /// Most bytes all partial messages together may hold (`reassemblyBudgetBytes`).
    public let totalBytes: Int
    /// Most bytes the partial messages of one identity's devices together may hold
    /// (`reassemblyBytesPerIdentity`).
    public let perIdentityBytes: Int

    private struct Usage {
        var total = 0
        var byIdentity: [IdentityID: Int] = [:]
    }
    private let usage = Mutex(Usage())

    /// A budget with nothing reserved; the limits are taken as given, not checked.
    public init(totalBytes: Int, perIdentityBytes: Int) {
        self.totalBytes = totalBytes
        self.perIdentityBytes = perIdentityBytes
    }

    /// Bytes reserved now, in all and by one identity (for tests and status).
    public var reservedBytes: Int { usage.withLock { $0.total } }
    /// Bytes reserved now by the connections of `identity`; 0 when none.
    public func reservedBytes(of identity: IdentityID) -> Int { usage.withLock { $0.byIdentity[identity] ?? 0 } }

    /// Reserves `bytes` for `identity`, or names the limit it would exceed (nothing reserved).
    func reserve(_ bytes: Int, for identity: IdentityID) -> ReassemblyLimit? {
        usage.withLock { usage in
            let mine = usage.byIdentity[identity] ?? 0
            if mine + bytes > perIdentityBytes { return .perIdentity(perIdentityBytes) }
            if usage.total + bytes > totalBytes { return .total(totalBytes) }
            usage.total += bytes
            usage.byIdentity[identity] = mine + bytes
            return nil
        }
    }

    func release(_ bytes: Int, for identity: IdentityID) {
        guard bytes > 0 else { return }
        usage.withLock { usage in
            usage.total -= bytes
            let left = (usage.byIdentity[identity] ?? 0) - bytes
            usage.byIdentity[identity] = left > 0 ? left : nil
        }
    }
}

/// The limit a fragment would have exceeded; its text is the close reason's detail.
public enum ReassemblyLimit: Sendable, Equatable, CustomStringConvertible {
    case perIdentity(Int)
    case total(Int)

    /// The configuration name of the limit and its value, e.g. "reassemblyBudgetBytes (N bytes)".
    public var description: String {
        switch self {
        case .perIdentity(let n): "reassemblyBytesPerIdentity (\(n) bytes)"
        case .total(let n): "reassemblyBudgetBytes (\(n) bytes)"
        }
    }
}

/// What one connection holds of a budget. A class so that a channel dropped without closing
/// still gives its share back (deinit); confined to the channel's owner like the channel.
final class ReassemblyReservation: @unchecked Sendable {
    let budget: ReassemblyBudget
    let identity: IdentityID
    private(set) var held = 0

    init(budget: ReassemblyBudget, identity: IdentityID) {
        self.budget = budget
        self.identity = identity
    }

    /// Raises the reservation to `bytes` (it never shrinks while a message is incomplete).
    func hold(_ bytes: Int) -> ReassemblyLimit? {
        guard bytes > held else { return nil }
        if let limit = budget.reserve(bytes - held, for: identity) { return limit }
        held = bytes
        return nil
    }

    func releaseAll() {
        budget.release(held, for: identity)
        held = 0
    }

    deinit { budget.release(held, for: identity) }
}
