package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// xattrHelper runs inside the sandbox as the attacker: it reads the
// extended attributes of path (outside the read roots) through every
// call that takes a path or an O_PATH descriptor, and drops notes.txt
// (in the workspace) from the page cache. It prints name=result.
func xattrHelper(path string) int {
	buf := make([]byte, 4096)
	show := func(name string, n int, err error) {
		if err != nil {
			fmt.Printf("%s=%s\n", name, unix.ErrnoName(err.(unix.Errno)))
			return
		}
		fmt.Printf("%s=%q\n", name, buf[:n])
	}
	n, err := unix.Getxattr(path, "user.planbridge", buf)
	show("getxattr", n, err)
	n, err = unix.Lgetxattr(path, "user.planbridge", buf)
	show("lgetxattr", n, err)
	n, err = unix.Listxattr(path, buf)
	show("listxattr", n, err)
	n, err = unix.Llistxattr(path, buf)
	show("llistxattr", n, err)
	if fd, err := unix.Open(path, unix.O_PATH, 0); err == nil {
		n, err = unix.Fgetxattr(fd, "user.planbridge", buf)
		show("fgetxattr-opath", n, err)
	}
	// An open file of the workspace: its attributes stay readable.
	fd, err := unix.Open("notes.txt", unix.O_RDONLY, 0)
	if err != nil {
		fmt.Println("open:", err)
		return 2
	}
	n, err = unix.Fgetxattr(fd, "user.planbridge", buf)
	show("fgetxattr-workspace", n, err)
	for _, a := range []struct {
		name   string
		advice int
	}{{"fadvise-DONTNEED", unix.FADV_DONTNEED}, {"fadvise-SEQUENTIAL", unix.FADV_SEQUENTIAL}} {
		w := "ok"
		if err := unix.Fadvise(fd, 0, 0, a.advice); err != nil {
			w = unix.ErrnoName(err.(unix.Errno))
		}
		fmt.Printf("%s=%s\n", a.name, w)
	}
	return 0
}

// TestReadOnlyXattrOutsideRoots: Landlock does not check getxattr and
// listxattr by path, so without bwrap the filter must keep a program
// from reading the extended attributes of a file outside its read roots
// (which, user.* ones, hold data); with bwrap the file is absent. The
// attributes of a file the program opened still read, and a program may
// not drop a file's pages from the machine's page cache.
func TestReadOnlyXattrOutsideRoots(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		for _, noBwrap := range []bool{false, true} {
			t.Run(fmt.Sprintf("uid=%d/bwrap=%v", uid, !noBwrap), func(t *testing.T) {
				f := newFixture(t, uid)
				key := filepath.Join(f.home, ".ssh", "id_ed25519")
				if err := unix.Setxattr(key, "user.planbridge", []byte(f.secret), 0); err != nil {
					t.Fatalf("set the outside file's attribute: %v", err)
				}
				if err := unix.Setxattr(filepath.Join(f.ws, "notes.txt"), "user.planbridge", []byte("inside"), 0); err != nil {
					t.Fatal(err)
				}
				out, code := f.run(t, f.sandbox(t, noBwrap, Limits{}),
					[]string{"SANDBOX_TEST_HELPER=xattr", "SANDBOX_TEST_ADDR=" + key}, filepath.Join(f.bin, "helper"))
				if code != 0 {
					t.Fatalf("the attacker: exit %d\n%s", code, out)
				}
				if strings.Contains(out, f.secret) || strings.Contains(out, "user.planbridge") {
					t.Errorf("the attributes of a file outside the read roots were read:\n%s", out)
				}
				for _, w := range []string{`fgetxattr-workspace="inside"`, "fadvise-DONTNEED=EPERM", "fadvise-SEQUENTIAL=ok"} {
					if !strings.Contains(out, w+"\n") {
						t.Errorf("want %s in\n%s", w, out)
					}
				}
			})
		}
	}
}
