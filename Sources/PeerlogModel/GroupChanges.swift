/// What changed in a replica between two of its change stamps, by group.
public struct GroupChanges: Sendable, Equatable {
    /// Groups with a receipt or envelope stored since.
    public var groups: Set<GroupID>
    /// Those of them with a group operation (`group.*`) stored or committed since.
    public var groupOperations: Set<GroupID>

    /// The two sets; `groupOperations` is a subset of `groups`.
    public init(groups: Set<GroupID>, groupOperations: Set<GroupID>) {
        self.groups = groups
        self.groupOperations = groupOperations
    }
}
