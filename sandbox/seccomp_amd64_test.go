package sandbox

// x32Read is read(2) in amd64's x32 ABI, which the filter refuses.
func x32Read() uintptr { return 0x40000000 }
