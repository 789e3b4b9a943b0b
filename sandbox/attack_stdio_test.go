package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stdioHelper runs inside the sandbox as the attacker: it sets
// O_NONBLOCK and O_APPEND on its standard descriptors and on a
// duplicate of stdin, with fcntl and with ioctl FIONBIO.
func stdioHelper() int {
	d, err := unix.Dup(0)
	if err != nil {
		fmt.Println("dup:", err)
		return 2
	}
	on := 1
	for _, fd := range []int{0, 1, 2, d} {
		w := "ok"
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err == nil {
			_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl|unix.O_NONBLOCK|unix.O_APPEND)
		}
		if err == nil {
			_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fionbio, uintptr(unsafe.Pointer(&on)))
			if e != 0 {
				err = e
			}
		}
		if err != nil {
			w = err.Error()
		}
		fmt.Printf("fd%d=%s\n", fd, w)
	}
	return 0
}

// TestReadOnlyPrivateStdio: descriptors the caller passes as the
// program's stdin, stdout and stderr (a shell's terminal or pipe) share
// their file status flags with whoever else has them open; the program
// must get descriptions of its own, so that making them non-blocking or
// append-only (which it may, on its own) leaves the caller's unchanged.
func TestReadOnlyPrivateStdio(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		for _, noBwrap := range []bool{false, true} {
			t.Run(fmt.Sprintf("uid=%d/bwrap=%v", uid, !noBwrap), func(t *testing.T) {
				f := newFixture(t, uid)
				var in, out [2]int
				if err := unix.Pipe2(in[:], unix.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				if err := unix.Pipe2(out[:], unix.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				inR, inW := os.NewFile(uintptr(in[0]), "in-r"), os.NewFile(uintptr(in[1]), "in-w")
				outR, outW := os.NewFile(uintptr(out[0]), "out-r"), os.NewFile(uintptr(out[1]), "out-w")
				defer inR.Close()
				defer inW.Close()
				defer outR.Close()
				defer outW.Close()
				sb := f.sandbox(t, noBwrap, Limits{})
				cmd, err := sb.Command(t.Context(), f.ws, []string{filepath.Join(f.bin, "helper")},
					[]string{"PATH=" + fixedPath, "SANDBOX_TEST_HELPER=stdio"})
				if err != nil {
					t.Fatal(err)
				}
				cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
				if uid != 0 {
					cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
				}
				err = Run(cmd)
				for _, fd := range []int{in[0], out[1]} {
					fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
					if err != nil {
						t.Fatal(err)
					}
					if fl&(unix.O_NONBLOCK|unix.O_APPEND) != 0 {
						t.Errorf("the caller's pipe descriptor %d has flags %#x after the program ran", fd, fl)
					}
				}
				outW.Close()
				b := make([]byte, 4096)
				n, _ := outR.Read(b)
				got := string(b[:n])
				if err != nil {
					t.Fatalf("the attacker: %v\n%s", err, got)
				}
				for _, fd := range []int{0, 1, 2, 3} {
					if !strings.Contains(got, fmt.Sprintf("fd%d=ok\n", fd)) {
						t.Errorf("fd %d: the program could not set its own descriptor's flags:\n%s", fd, got)
					}
				}
			})
		}
	}
}
