package worktree

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Entry is one line of `git status --porcelain --untracked-files=all
// --no-renames`: Staging and Worktree are its X and Y codes ('M', 'T', 'A',
// 'D', ' ', the unmerged pairs such as 'U','U', and '?','?' for untracked
// paths). An untracked nested repository is one entry whose Path ends in
// '/'.
type Entry struct {
	Path              string
	Staging, Worktree byte
}

// Porcelain renders the entry as git does: "XY path", with the path quoted
// C-style when it holds a space, a quote, a backslash, a control or a
// non-ASCII byte (core.quotePath's default).
func (e Entry) Porcelain() string {
	return string([]byte{e.Staging, e.Worktree}) + " " + quotePath(e.Path)
}

// Untracked reports whether the entry is an untracked path ("??").
func (e Entry) Untracked() bool { return e.Staging == '?' }

func quotePath(p string) string {
	needs := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == ' ' || c == '"' || c == '\\' || c >= 0x7f {
			needs = true
			break
		}
	}
	if !needs {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Status compares HEAD, the index and the working tree like `git status
// --porcelain --untracked-files=all --no-renames` and returns the entries in
// git's order: tracked changes (unmerged paths included) sorted by path,
// then untracked paths sorted by path (so a path both deleted from the index
// and present in the working tree appears twice, in both parts).
//
// It honours .gitignore files at every level, .git/info/exclude and
// core.excludesFile; core.fileMode; the index's stat data, hashing a file
// only when its stat data disagrees or is racy (modified at or after the
// index was written). It does not descend into nested repositories or other
// worktrees, which are reported as "dir/" like git does. Submodules
// (gitlinks) are compared by commit only: their inner changes are not
// inspected.
//
// Status only reads: it never writes the index (unlike git, it does not
// refresh stat data) and never runs fsmonitor, filters or hooks. The walk
// runs in parallel and stops early when ctx is cancelled.
func (r *Repo) Status(ctx context.Context) ([]Entry, error) {
	idx, release, err := readIndex(filepath.Join(r.GitDir, "index"))
	if err != nil {
		return nil, err
	}
	defer release()
	var (
		staged    []Entry
		stagedErr error
		done      = make(chan struct{})
	)
	go func() {
		defer close(done)
		staged, stagedErr = r.diffHead(ctx, idx)
	}()
	w := newWalker(ctx, r, idx)
	untracked, err := w.run()
	<-done
	if err == nil {
		err = stagedErr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}

	// Indices, not pointers: out grows, and append moves its elements.
	byPath := make(map[string]int, len(staged))
	out := make([]Entry, 0, len(staged))
	for _, e := range staged {
		byPath[e.Path] = len(out)
		out = append(out, Entry{Path: e.Path, Staging: e.Staging, Worktree: ' '})
	}
	for i := range idx.entries {
		code := w.wt[i]
		if code == 0 {
			continue
		}
		e := &idx.entries[i]
		if k, ok := byPath[e.name]; ok {
			out[k].Worktree = code
			continue
		}
		byPath[e.name] = len(out)
		out = append(out, Entry{Path: e.name, Staging: ' ', Worktree: code})
	}
	out = append(out, unmergedEntries(idx)...)
	for i := range out {
		out[i].Path = strings.Clone(out[i].Path) // index names die with release
	}
	// git's order: tracked changes (unmerged ones included) by path, then
	// untracked paths by path.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	sort.Strings(untracked)
	for _, p := range untracked {
		out = append(out, Entry{Path: p, Staging: '?', Worktree: '?'})
	}
	return out, nil
}

// unmergedEntries returns the porcelain codes of conflicted paths.
func unmergedEntries(idx *gitIndex) []Entry {
	var out []Entry
	es := idx.entries
	for i := 0; i < len(es); {
		if es[i].stage == 0 {
			i++
			continue
		}
		var stages uint8
		j := i
		for ; j < len(es) && es[j].name == es[i].name; j++ {
			stages |= 1 << es[j].stage
		}
		// stage 1 = base, 2 = ours, 3 = theirs
		codes := map[uint8]string{
			1 << 1: "DD", 1 << 2: "AU", 1<<1 | 1<<2: "UD",
			1 << 3: "UA", 1<<1 | 1<<3: "DU", 1<<2 | 1<<3: "AA",
			1<<1 | 1<<2 | 1<<3: "UU",
		}
		if c, ok := codes[stages&^1]; ok {
			out = append(out, Entry{Path: es[i].name, Staging: c[0], Worktree: c[1]})
		}
		i = j
	}
	return out
}

// span is the run entries[lo:hi] of index entries under one directory (all
// share its "dir/" prefix, so they are contiguous in index order).
type span struct{ lo, hi int }

func (s span) empty() bool { return s.lo >= s.hi }

// cmpTail compares s with name+tail (tail 0: with name alone) without
// building the string.
func cmpTail(s, name string, tail byte) int {
	n := min(len(s), len(name))
	if c := strings.Compare(s[:n], name[:n]); c != 0 {
		return c
	}
	switch {
	case len(s) < len(name):
		return -1
	case tail == 0:
		if len(s) > len(name) {
			return 1
		}
		return 0
	case len(s) == len(name):
		return -1
	case s[len(name)] != tail:
		if s[len(name)] < tail {
			return -1
		}
		return 1
	case len(s) > len(name)+1:
		return 1
	}
	return 0
}

// lowerBound returns the first entry in sp whose name, past the first off
// bytes, is ≥ name+tail.
func (w *walker) lowerBound(sp span, off int, name string, tail byte) int {
	es := w.idx.entries
	lo, hi := sp.lo, sp.hi
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cmpTail(es[m].name[off:], name, tail) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// lookupFile returns the index of the tracked file called name in the
// directory whose entries are sp and whose prefix is off bytes long, or -1.
func (w *walker) lookupFile(sp span, off int, name string) int {
	if sp.empty() {
		return -1
	}
	es := w.idx.entries
	if i := w.lowerBound(sp, off, name, 0); i < sp.hi && len(es[i].name) == off+len(name) && es[i].name[off:] == name {
		return i
	}
	return -1
}

// lookupDir returns the span of tracked entries under name/ in the
// directory whose entries are sp (empty if none).
func (w *walker) lookupDir(sp span, off int, name string) span {
	if sp.empty() {
		return span{}
	}
	es := w.idx.entries
	lo := w.lowerBound(sp, off, name, '/')
	if lo == sp.hi || !strings.HasPrefix(es[lo].name[off:], name) || len(es[lo].name) <= off+len(name) || es[lo].name[off+len(name)] != '/' {
		return span{}
	}
	return span{lo, w.lowerBound(span{lo, sp.hi}, off, name, '0')} // '0' follows '/'
}

// walker is one parallel status walk of the working tree.
type walker struct {
	ctx      context.Context
	root     string // with trailing separator
	idx      *gitIndex
	fileMode bool
	racySec  int64  // entries with mtime ≥ this second are racily clean
	excl     string // core.excludesFile
	info     string // info/exclude

	wt   []byte // Y code per index entry; each slot written by one goroutine
	seen []bool // entry found in the working tree; same ownership as wt

	qmu     sync.Mutex // guards queue, pending and untracked
	qcond   *sync.Cond
	queue   []dirJob
	pending int // queued or running jobs
	// untracked collects "??" paths.
	untracked []string
}

// dirJob is one directory to walk.
type dirJob struct {
	rel       string // "" or "dir/"
	sp        span
	ign       *ignoreList
	untracked bool // report untracked files (the directory is not ignored)
}

func newWalker(ctx context.Context, r *Repo, idx *gitIndex) *walker {
	n := len(idx.entries)
	w := &walker{
		ctx:      ctx,
		root:     r.Root + string(filepath.Separator),
		idx:      idx,
		fileMode: r.cfg.fileMode,
		racySec:  idx.mtime.Unix(),
		excl:     r.cfg.excludesFile,
		info:     filepath.Join(r.CommonDir, "info", "exclude"),
		wt:       make([]byte, n),
		seen:     make([]bool, n),
	}
	w.qcond = sync.NewCond(&w.qmu)
	return w
}

// run walks the working tree with a fixed pool of workers and returns the
// untracked paths.
func (w *walker) run() ([]string, error) {
	excludes := &ignoreList{patterns: readIgnoreFile(w.excl, false)}
	info := &ignoreList{parent: excludes, patterns: readIgnoreFile(w.info, false)}
	w.push(dirJob{sp: span{0, len(w.idx.entries)}, ign: info, untracked: true})
	var wg sync.WaitGroup
	// One worker per core: lstat of cached inodes does not block, and
	// more workers only add scheduling.
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, ok := w.pop()
				if !ok {
					return
				}
				if w.ctx.Err() == nil {
					w.dir(j)
				}
				w.done()
			}
		}()
	}
	wg.Wait()
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	for i := range w.idx.entries {
		e := &w.idx.entries[i]
		if !w.seen[i] && e.stage == 0 && !e.skipWorktree && !e.assumeValid {
			w.wt[i] = 'D'
		}
	}
	return w.untracked, nil
}

func (w *walker) push(j dirJob) {
	w.qmu.Lock()
	w.queue = append(w.queue, j)
	w.pending++
	w.qmu.Unlock()
	w.qcond.Signal()
}

// pop returns the next job, waiting while other workers may still add
// some; ok is false once the walk is complete.
func (w *walker) pop() (dirJob, bool) {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	for len(w.queue) == 0 {
		if w.pending == 0 {
			return dirJob{}, false
		}
		w.qcond.Wait()
	}
	j := w.queue[len(w.queue)-1]
	w.queue = w.queue[:len(w.queue)-1]
	return j, true
}

func (w *walker) done() {
	w.qmu.Lock()
	w.pending--
	last := w.pending == 0
	w.qmu.Unlock()
	if last {
		w.qcond.Broadcast()
	}
}

// dir processes one directory: it compares the tracked files it holds,
// collects untracked ones (when the directory is not ignored) and queues
// its subdirectories.
func (w *walker) dir(j dirJob) {
	rel, ign, untracked := j.rel, j.ign, j.untracked
	fd, err := unix.Open(w.root+rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		// Vanished or unreadable: its tracked entries stay unseen (deleted),
		// as git reports them when it cannot lstat them.
		return
	}
	defer unix.Close(fd)
	list := dirLists.Get().(*dirList)
	defer dirLists.Put(list)
	des, err := readDirents(fd, list)
	if err != nil {
		return
	}
	if untracked {
		for _, de := range des {
			if de.name == ".gitignore" {
				if ps := readIgnoreFile(w.root+rel+".gitignore", true); len(ps) > 0 {
					ign = &ignoreList{parent: ign, base: rel, patterns: ps}
				}
				break
			}
		}
	}
	off := len(rel)
	var found []string
	for _, de := range des {
		name := de.name
		typ := de.typ
		if typ == unix.DT_UNKNOWN {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			typ = dtypeOf(st.Mode)
		}
		file := w.lookupFile(j.sp, off, name)
		if file >= 0 {
			w.checkTracked(fd, name, file)
			if typ != unix.DT_DIR || w.idx.entries[file].mode == modeGitlink {
				continue
			}
			// A tracked file replaced by a directory: the file is deleted
			// (checkTracked) and the directory is untracked.
		}
		if typ == unix.DT_DIR {
			path := rel + name
			if sub := w.lookupDir(j.sp, off, name); !sub.empty() {
				w.push(dirJob{rel: path + "/", sp: sub, ign: ign, untracked: untracked && !ign.excluded(path, true)})
				continue
			}
			if !untracked || ign.excluded(path, true) {
				continue
			}
			if isNestedRepo(fd, name) {
				found = append(found, path+"/") // a new string: safe to keep
				continue
			}
			w.push(dirJob{rel: path + "/", ign: ign, untracked: true})
			continue
		}
		if !untracked || (typ != unix.DT_REG && typ != unix.DT_LNK) {
			continue
		}
		if path := rel + name; !ign.excluded(path, false) {
			found = append(found, strings.Clone(path)) // name is a view into list
		}
	}
	if len(found) > 0 {
		w.qmu.Lock()
		w.untracked = append(w.untracked, found...)
		w.qmu.Unlock()
	}
}

// dirent is one directory entry; typ is a DT_* constant. name is a view
// into the dirList buffer it came from: it must be cloned to outlive it.
type dirent struct {
	name string
	typ  uint8
}

// dirList holds the raw getdents output of one directory and the entries
// parsed from it; lists are pooled, so that listing 20k names allocates
// nothing in the steady state.
type dirList struct {
	buf  []byte
	ents []dirent
}

var dirLists = sync.Pool{New: func() any { return &dirList{buf: make([]byte, 0, 32<<10)} }}

// readDirents lists a directory with getdents64 directly, without the
// per-entry allocations and the lstat fallback of os.ReadDir; "." and ".."
// and ".git" are left out.
func readDirents(fd int, l *dirList) ([]dirent, error) {
	l.buf, l.ents = l.buf[:0], l.ents[:0]
	for {
		if cap(l.buf)-len(l.buf) < 8<<10 {
			l.buf = append(l.buf, make([]byte, cap(l.buf))...)[:len(l.buf)]
		}
		n, err := unix.Getdents(fd, l.buf[len(l.buf):cap(l.buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		l.buf = l.buf[:len(l.buf)+n]
	}
	// Views are taken only now: the buffer no longer moves.
	buf := l.buf
	for off := 0; off+19 <= len(buf); {
		reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
		if reclen == 0 || off+reclen > len(buf) {
			break
		}
		typ := buf[off+18]
		nameb := buf[off+19 : off+reclen]
		if i := bytes.IndexByte(nameb, 0); i >= 0 {
			nameb = nameb[:i]
		}
		off += reclen
		switch string(nameb) {
		case "", ".", "..", ".git":
			continue
		}
		l.ents = append(l.ents, dirent{name: unsafe.String(unsafe.SliceData(nameb), len(nameb)), typ: typ})
	}
	return l.ents, nil
}

func dtypeOf(mode uint32) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFLNK:
		return unix.DT_LNK
	}
	return dtOther
}

// dtOther marks sockets, FIFOs and devices, which git never lists.
const dtOther = 255

// isNestedRepo reports whether dir (in the directory open as dirfd) holds a
// git repository or a linked worktree, which git shows as one untracked
// "dir/" entry without looking inside.
func isNestedRepo(dirfd int, dir string) bool {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, dir+"/.git", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.Fstatat(dirfd, dir+"/.git/HEAD", &st, 0) == nil
	case unix.S_IFREG:
		return true
	}
	return false
}

// checkTracked sets the worktree code of index entry i, whose file is name
// in the directory open as dirfd.
func (w *walker) checkTracked(dirfd int, name string, i int) {
	w.seen[i] = true
	e := &w.idx.entries[i]
	if e.stage != 0 || e.skipWorktree || e.assumeValid {
		return
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		w.wt[i] = 'D'
		return
	}
	if e.intentToAdd {
		w.wt[i] = 'A'
		return
	}
	code, err := compareEntry(e, &st, w.fileMode, w.racySec, func() ([20]byte, error) {
		return hashAt(dirfd, name, &st)
	})
	if err != nil {
		// Unreadable: report it as modified rather than fail the walk.
		code = 'M'
	}
	w.wt[i] = code
}

// compareEntry returns the worktree code of an index entry given the lstat
// of its file: 0 when clean, 'M', 'T' (type change) or 'D' (replaced by a
// directory). hash is called only when the stat data cannot decide.
func compareEntry(e *indexEntry, st *unix.Stat_t, fileMode bool, racySec int64, hash func() ([20]byte, error)) (byte, error) {
	ft := st.Mode & unix.S_IFMT
	switch e.mode & modeTypeMask {
	case modeGitlink:
		if ft == unix.S_IFDIR {
			return 0, nil
		}
		return 'T', nil
	case modeSymlink:
		if ft == unix.S_IFDIR {
			return 'D', nil
		}
		if ft != unix.S_IFLNK {
			return 'T', nil
		}
	default:
		if ft == unix.S_IFDIR {
			return 'D', nil
		}
		if ft != unix.S_IFREG {
			return 'T', nil
		}
		if fileMode && (e.mode^st.Mode)&0o100 != 0 {
			return 'M', nil
		}
	}
	if statMatches(e, st) && int64(e.mtimeSec) < racySec {
		return 0, nil
	}
	if uint32(st.Size) != e.size && e.size != 0 {
		return 'M', nil
	}
	h, err := hash()
	if err != nil {
		return 0, err
	}
	if h != e.hash {
		return 'M', nil
	}
	return 0, nil
}

// statMatches reports whether st agrees with the stat data in the index
// (git's ce_match_stat_basic with nanoseconds, trustctime and checkstat on;
// the device number is not compared, as in default git builds).
func statMatches(e *indexEntry, st *unix.Stat_t) bool {
	return uint32(st.Mtim.Sec) == e.mtimeSec && uint32(st.Mtim.Nsec) == e.mtimeNsec &&
		uint32(st.Ctim.Sec) == e.ctimeSec && uint32(st.Ctim.Nsec) == e.ctimeNsec &&
		uint32(st.Ino) == e.ino && st.Uid == e.uid && st.Gid == e.gid &&
		uint32(st.Size) == e.size
}

// hashAt computes the blob id of name (in the directory open as dirfd): the
// link target for a symbolic link, the raw content otherwise (no filters).
func hashAt(dirfd int, name string, st *unix.Stat_t) ([20]byte, error) {
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		buf := make([]byte, st.Size+1)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return [20]byte{}, err
		}
		return blobHash(buf[:n]), nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return [20]byte{}, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return hashReader(f, st.Size)
}

// hashReader hashes size bytes of r as a blob.
func hashReader(r io.Reader, size int64) ([20]byte, error) {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	n, err := io.Copy(h, r)
	if err != nil {
		return [20]byte{}, err
	}
	if n != size {
		return [20]byte{}, errors.New("file changed while hashing")
	}
	var out [20]byte
	h.Sum(out[:0])
	return out, nil
}

func blobHash(b []byte) [20]byte {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(b)) + "\x00"))
	h.Write(b)
	var out [20]byte
	h.Sum(out[:0])
	return out
}
