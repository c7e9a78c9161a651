import PeerlogFuzzHarness

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSyncMessages(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    FuzzHarness.syncMessage(Array(UnsafeRawBufferPointer(start: start, count: count)))
    return 0
}
