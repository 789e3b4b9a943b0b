package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// memoryHelper is the attacking program of TestReadOnlyMemoryPerSandbox:
// as "memory" it starts four children at once and prints how many
// completed; as "memchild" it touches 96 MiB and holds it a moment.
// Each child stays far below the per-process address-space limit; four
// together exceed the sandbox's memory limit.
func memoryHelper(kind string) int {
	if kind == "memchild" {
		b := make([]byte, 96<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		time.Sleep(time.Second)
		fmt.Fprint(os.Stderr, "", b[len(b)/2])
		return 0
	}
	var cmds []*exec.Cmd
	for i := 0; i < 4; i++ {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "SANDBOX_TEST_HELPER=memchild")
		if err := c.Start(); err != nil {
			fmt.Println("start:", err)
			return 1
		}
		cmds = append(cmds, c)
	}
	done := 0
	for _, c := range cmds {
		if c.Wait() == nil {
			done++
		}
	}
	fmt.Printf("completed %d of %d\n", done, len(cmds))
	return 0
}

// TestReadOnlyMemoryPerSandbox: the processes of one sandbox share one
// memory limit where a memory cgroup can be made (as root, which CI and
// this test run as; the program itself may run as any user), so many
// processes each under the address-space limit cannot together take the
// machine's memory: of four children touching 96 MiB each under a 256
// MiB limit, not all complete. Before, each process was bounded alone
// and all four completed.
func TestReadOnlyMemoryPerSandbox(t *testing.T) {
	if l := Probe(); l.memRoot == "" || !strings.HasPrefix(l.Memory, "memory cgroup") {
		t.Fatalf("no memory cgroup can be made here (as root): %q", l.Memory)
	}
	for _, uid := range []int{0, 65534} {
		for _, noBwrap := range []bool{false, true} {
			t.Run(fmt.Sprintf("uid=%d/bwrap=%v", uid, !noBwrap), func(t *testing.T) {
				f := newFixture(t, uid)
				out, code := f.run(t, f.sandbox(t, noBwrap, Limits{Memory: 256 << 20}),
					[]string{"SANDBOX_TEST_HELPER=memory"}, f.bin+"/helper")
				if code == 0 && strings.Contains(out, "completed 4 of 4") {
					t.Errorf("four children took 384 MiB under a 256 MiB sandbox limit:\n%s", out)
				}
				// Under the default limit (2 GiB) they all complete.
				out, code = f.run(t, f.sandbox(t, noBwrap, Limits{}), []string{"SANDBOX_TEST_HELPER=memory"}, f.bin+"/helper")
				if code != 0 || !strings.Contains(out, "completed 4 of 4") {
					t.Errorf("under the default limit: exit %d\n%s", code, out)
				}
			})
		}
	}
}

// TestSweepLeftCgroups: the cgroups a killed planbridge left (its pid
// gone) are removed at the next probe, in the pids and the memory
// hierarchy; those of a live process are kept even while empty (its
// launcher may not have joined yet), and so are other directories.
func TestSweepLeftCgroups(t *testing.T) {
	l := Probe()
	if l.cgroupRoot == "" || l.memRoot == "" {
		t.Fatalf("no pids or memory cgroup can be made here (as root): %q, %q", l.Processes, l.Memory)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := gone.Process.Pid, os.Getppid()
	for _, root := range []string{l.cgroupRoot, l.memRoot} {
		names := map[string]bool{ // name: kept
			fmt.Sprintf("planbridge-sandbox-%d-1", dead):     false,
			fmt.Sprintf("planbridge-sandbox-mem-%d-2", dead): false,
			fmt.Sprintf("planbridge-sandbox-%d-3", live):     true,
			fmt.Sprintf("planbridge-sandbox-mem-%d-4", live): true,
			fmt.Sprintf("other-%d-5", dead):                  true,
		}
		for n := range names {
			if err := os.Mkdir(filepath.Join(root, n), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(filepath.Join(root, n)) })
		}
		sweepCgroups(root)
		for n, kept := range names {
			if _, err := os.Stat(filepath.Join(root, n)); (err == nil) != kept {
				t.Errorf("%s/%s: kept %v, want %v", root, n, err == nil, kept)
			}
		}
	}
}
