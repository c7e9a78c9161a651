import PeerlogEngine
import PeerlogModel

/// A receipt or envelope given up on after retries.
public struct PeerlogDeadLetter: Sendable, Hashable {
    /// `receipt` or `envelope`.
    public let kind: String
    /// Its group.
    public let group: GroupID
    /// Its content id.
    public let cid: CID
    /// How often it was tried.
    public let retries: Int
    /// Why it was given up on.
    public let reason: String
    /// When it first arrived (milliseconds since 1970).
    public let firstSeenAt: UInt64
    /// When it was last tried (milliseconds since 1970).
    public let lastAttemptAt: UInt64
}

/// A receipt refused because its signature or certificate does not verify: what it claims
/// and who sent it (evidence of a forgery attempt or corruption).
public struct PeerlogInvalidReceipt: Sendable, Hashable {
    /// The group it claims.
    public let group: GroupID
    /// Its content id.
    public let cid: CID
    /// The author device it claims, when readable.
    public let author: DeviceID?
    /// The identity it claims, when readable.
    public let identity: IdentityID?
    /// The peer that sent it; nil when it came from an imported file.
    public let peer: DeviceID?
    /// Why it was refused.
    public let reason: String
    /// When it was refused (milliseconds since 1970).
    public let at: UInt64
}

extension Peerlog {
    /// Receipts and envelopes given up on after retries.
    public func deadLetters() async throws -> [PeerlogDeadLetter] {
        try await call { [self] in
            try replica.deadLetters().map {
                PeerlogDeadLetter(
                    kind: $0.kind.rawValue, group: $0.group, cid: $0.cid, retries: $0.retryCount, reason: $0.reason,
                    firstSeenAt: $0.firstSeenAt, lastAttemptAt: $0.lastAttemptAt)
            }
        }
    }

    /// Receipts refused as invalid (forgeries), the newest `limit` first.
    public func invalidReceipts(limit: Int = 1_000) async throws -> [PeerlogInvalidReceipt] {
        try await call { [self] in
            try replica.invalidReceipts(limit: limit).map {
                PeerlogInvalidReceipt(
                    group: $0.group, cid: $0.cid, author: $0.author, identity: $0.identity, peer: $0.peer,
                    reason: $0.reason, at: $0.at)
            }
        }
    }
}
