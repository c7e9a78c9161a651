import PeerlogCrypto
import PeerlogEngine

/// Why a facade call failed: a ``code`` an app can switch on, and one sentence for people.
///
/// ```swift
/// do {
///     try await peerlog.put("note/1", note, in: group)
/// } catch let error as PeerlogError {
///     switch error.code {
///     case .notAMember: showJoinScreen()
///     case .payloadTooLarge: storeElsewhere(note)
///     default: show(error.description)
///     }
/// }
/// ```
///
/// Codes are static members of a struct, not enum cases, so new ones can be added without
/// breaking a `switch` (which needs a `default:`). Equality is on ``code`` only. A description
/// names ids, group names, paths and counts; it never holds keys or SQL arguments.
public struct PeerlogError: CodedError {
    /// What went wrong, for code to switch on; compare against the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case home, groupNotFound, ambiguousGroupName, groupDeleted, notAMember, notPermitted, groupFull
            case refused, invalidValue, payloadTooLarge, batchTooLarge, storage, network, file
            case pairing, wrongPassphrase, epochKeyMissing, snapshotUnavailable, offlineLimit
            case logIncomplete, snapshotRefused, diskFull, blobNotHeld, blobUnreadable, blobUnavailable
            case receiptNotFound
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The home folder has no identity and `create` was false, or cannot be created or opened.
        public static let home = Code(.home)
        /// No group with that id or name is held here.
        public static let groupNotFound = Code(.groupNotFound)
        /// Several groups have that name; use the group id.
        public static let ambiguousGroupName = Code(.ambiguousGroupName)
        /// The group was deleted; nothing more can be written to it.
        public static let groupDeleted = Code(.groupDeleted)
        /// This device's identity (or the identity the operation names) is not an active member
        /// of the group.
        public static let notAMember = Code(.notAMember)
        /// This identity's role does not allow the operation (only an owner or admin may …).
        public static let notPermitted = Code(.notPermitted)
        /// Every seat of the group is taken.
        public static let groupFull = Code(.groupFull)
        /// Another rule of the group (as this replica sees it) refuses the write, or an operation
        /// is malformed; the description says which.
        public static let refused = Code(.refused)
        /// A value the JSON mapping cannot hold (floats, non-finite numbers) or cannot decode,
        /// or an argument that is not what it should be (a device id, a voter list).
        public static let invalidValue = Code(.invalidValue)
        /// A receipt's payload (64 KiB), or a batch's payloads together, would be over the limit.
        public static let payloadTooLarge = Code(.payloadTooLarge)
        /// A batch holds more operations than ``Peerlog/maxBatchOperations``.
        public static let batchTooLarge = Code(.batchTooLarge)
        /// Storage or another lower-level failure.
        public static let storage = Code(.storage)
        /// Networking failed to start (address in use, another node on this home).
        public static let network = Code(.network)
        /// A file to read or write: it exists already (exports never overwrite), cannot be
        /// read or written, or is malformed (an import names the line).
        public static let file = Code(.file)
        /// Pairing by short code failed: a malformed, wrong, expired, used or exhausted code, a
        /// session that cannot be found or reached, or the host's refusal (the description says
        /// which; docs/PROTOCOL.md §20).
        public static let pairing = Code(.pairing)
        /// A passphrase does not open an identity backup: it is wrong, or the file was changed
        /// (authenticated encryption cannot tell the two apart). Nothing was written.
        public static let wrongPassphrase = Code(.wrongPassphrase)
        /// The group is end-to-end encrypted and this device does not hold the key in use yet:
        /// another member's device seals it to this one (docs/PROTOCOL.md §22.5). Try again later.
        public static let epochKeyMissing = Code(.epochKeyMissing)
        /// No snapshot of the group can be made now: nothing is committed, this identity is not an
        /// active member, committed receipts wait for an epoch key, or the state is over the
        /// snapshot size limit (docs/PROTOCOL.md §23.1; the description says which).
        public static let snapshotUnavailable = Code(.snapshotUnavailable)
        /// The write would pass one of the group's offline limits (docs/PROTOCOL.md §10.5): too
        /// many of this device's writes wait for a seq (100,000 by default), or the oldest has
        /// waited too long (30 days). Nothing was written; once the device reaches the group's
        /// sequencer and they commit, writes pass again (``Peerlog/offlineHeadroom(of:)``).
        public static let offlineLimit = Code(.offlineLimit)
        /// The operation needs the group's whole log, and this home holds none below its floor (it
        /// started from a snapshot, or was compacted: docs/PROTOCOL.md §23.2), as an export does.
        public static let logIncomplete = Code(.logIncomplete)
        /// A snapshot was not taken (docs/PROTOCOL.md §23.3; the description says why).
        public static let snapshotRefused = Code(.snapshotRefused)
        /// The disk holding the home is full: nothing was written (the description says how much
        /// space the operation needs, where that is known).
        public static let diskFull = Code(.diskFull)
        /// The value is a blob this device does not hold whole yet (docs/PROTOCOL.md §24): a
        /// running node fetches it from a peer that holds it; ``Peerlog/fetchBlob(_:in:)`` asks.
        public static let blobNotHeld = Code(.blobNotHeld)
        /// A blob held here does not open with the key its reference carries.
        public static let blobUnreadable = Code(.blobUnreadable)
        /// No part of a blob arrived for a while: no connected peer serves it (or no node runs).
        public static let blobUnavailable = Code(.blobUnavailable)
        /// This replica holds no receipt with that id: it was never written or received here, or
        /// was compacted away (docs/PROTOCOL.md §23.4).
        public static let receiptNotFound = Code(.receiptNotFound)

        /// The code's name, e.g. `notAMember`.
        public var description: String { "\(base)" }
    }

    /// Which operation of a batch was refused, and why.
    public struct BatchEntry: Sendable, Hashable {
        /// Its index in the batch (0-based).
        public let index: Int
        /// Why it was refused.
        public let reason: String
    }

    /// What went wrong.
    public let code: Code
    /// One sentence for people: what failed and what to do.
    public let description: String
    /// For a refused batch: the operation that was refused (nothing was written).
    public let batchEntry: BatchEntry?
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    /// An error of `code` saying `description`.
    public init(_ code: Code, _ description: String, file: String = #fileID, line: Int = #line) {
        self.init(code, description, batchEntry: nil, file: file, line: line)
    }

    init(_ code: Code, _ description: String, batchEntry: BatchEntry?, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.description = description
        self.batchEntry = batchEntry
        self.file = file
        self.line = line
    }
}

extension PeerlogError.Code {
    /// The facade's code for an engine error's code.
    init(engine code: ReplicaError.Code) {
        self =
            switch code {
            case .groupNotFound: .groupNotFound
            case .ambiguousGroupName: .ambiguousGroupName
            case .groupDeleted: .groupDeleted
            case .notAMember: .notAMember
            case .notPermitted: .notPermitted
            case .groupFull: .groupFull
            case .invalidOperation: .invalidValue
            case .payloadTooLarge: .payloadTooLarge
            case .batchTooLarge: .batchTooLarge
            case .invalidImport: .file
            case .storeCorrupt: .storage
            case .epochKeyMissing: .epochKeyMissing
            case .snapshotUnavailable: .snapshotUnavailable
            case .offlineLimitReached: .offlineLimit
            case .logIncomplete: .logIncomplete
            case .snapshotRefused: .snapshotRefused
            case .diskFull: .diskFull
            case .blobNotHeld: .blobNotHeld
            case .blobUnreadable: .blobUnreadable
            default: .refused
            }
    }
}
