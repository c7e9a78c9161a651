@_exported import enum PeerlogEncoding.CBOR
@_exported import struct PeerlogEncoding.CID
@_exported import enum PeerlogEngine.GroupStatus
@_exported import enum PeerlogEngine.MemberStatus
@_exported import struct PeerlogEngine.OfflineHeadroom
@_exported import struct PeerlogEngine.OfflineLimits
@_exported import enum PeerlogEngine.Role
@_exported import enum PeerlogEngine.SequencerAuthority
@_exported import enum PeerlogEngine.View
@_exported import struct PeerlogModel.DeviceID
// The types an app meets through the facade, so `import Peerlog` is the only import it needs.
@_exported import struct PeerlogModel.GroupID
@_exported import struct PeerlogModel.IdentityID
@_exported import struct PeerlogNode.CaptureStatus
@_exported import struct PeerlogNode.NodeStatus
@_exported import struct PeerlogNode.PairingTicket
@_exported import struct PeerlogNode.PeerAddress
