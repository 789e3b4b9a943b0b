package sandbox

// x32Read: arm64 has no x32 ABI.
func x32Read() uintptr { return 0 }
