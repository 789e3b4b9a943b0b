package sandbox

import "golang.org/x/sys/unix"

// archRules are the read-only filter's rules for the calls amd64 keeps
// from before the generic table (arm64 has only their *at and 2
// successors), in the same classes as [readOnlyRules].
func archRules() []scRule {
	var rs []scRule
	// The legacy forms of allowed calls, which the C library and older
	// programs still use here. arch_prctl acts only on the calling
	// thread's own registers and features (its thread pointer, CET
	// shadow stack, AMX permission).
	rs = append(rs, allow(unix.SYS_OPEN, unix.SYS_STAT, unix.SYS_LSTAT, unix.SYS_ACCESS, unix.SYS_READLINK,
		unix.SYS_GETDENTS, unix.SYS_DUP2, unix.SYS_PIPE, unix.SYS_POLL, unix.SYS_SELECT, unix.SYS_EPOLL_CREATE,
		unix.SYS_EPOLL_WAIT, unix.SYS_EVENTFD, unix.SYS_FORK, unix.SYS_VFORK, unix.SYS_GETPGRP, unix.SYS_TIME,
		unix.SYS_ALARM, unix.SYS_PAUSE, unix.SYS_ARCH_PRCTL)...)
	rs = append(rs, fail(unix.ENOSYS, unix.SYS_INOTIFY_INIT)...)
	rs = append(rs, fail(unix.EACCES, unix.SYS_MKDIR, unix.SYS_RMDIR, unix.SYS_UNLINK, unix.SYS_RENAME, unix.SYS_LINK,
		unix.SYS_SYMLINK, unix.SYS_MKNOD, unix.SYS_CREAT, unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN,
		unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_FUTIMESAT)...)
	return rs
}
