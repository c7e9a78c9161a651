import PeerlogEngine
import PeerlogModel
import PeerlogStore

/// An opened home directory: this device's keys and its replica database (`replica.sqlite`).
struct Node {
    let device: LocalDevice
    let replica: Replica

    init(_ home: HomeOptions) throws {
        device = try LocalDevice.load(home: home.path)
        let path = home.path + "/replica.sqlite"
        // A read-only home (mount, or another user's) still serves every reading command.
        do { replica = try Replica(path: path, device: device, access: Store.availableAccess(at: path)) } catch {
            throw CLIError("cannot open the replica in \(home.path): \(error)")
        }
    }

    /// A group this replica knows, by id text or unique name. (`resolveGroup` accepts any
    /// well-formed id; reads of an unknown one would quietly show an empty group.)
    func group(_ text: String) throws -> GroupID {
        let id = try replica.resolveGroup(text)
        guard try replica.groupIDs().contains(id) else { throw CLIError("this replica holds no group \(id) (import an export of it first)") }
        return id
    }

    /// The group's tentative state; an error when nothing is known of it yet (only receipts
    /// waiting for its `group.created`).
    func state(of group: GroupID, view: View = .tentative) throws -> GroupState {
        guard let state = try replica.state(of: group, view: view) else {
            throw CLIError("group \(group) has no state yet in the \(view.rawValue) view (its group.created receipt is not held)")
        }
        return state
    }
}
