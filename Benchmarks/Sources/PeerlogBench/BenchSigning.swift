import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

extension LocalDevice {
    /// `op` in `group` signed as this device's receipt number `counter`, after `parent` (none:
    /// the device's first), at `hlc` ms: how the fixtures build logs without a replica.
    func sign(
        _ op: GroupOperation, in group: GroupID, counter: UInt64, after parent: CID?, hlc: UInt64
    ) throws
        -> Receipt
    {
        try sign(
            Receipt.Draft(
                group: group, type: op.receiptType, counter: counter, parents: parent.map { [$0] } ?? [],
                hlc: HLCTimestamp(physical: hlc, logical: 0), body: op.body))
    }
}
