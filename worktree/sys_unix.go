package worktree

import "syscall"

const syscallENOTDIR = syscall.ENOTDIR
