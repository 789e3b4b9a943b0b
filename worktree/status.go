package worktree

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

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
// --porcelain --untracked-files=all --no-renames` and returns the entries
// sorted by path (a path both deleted from the index and present in the
// working tree appears twice: tracked entry first, then "??").
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
	idx, err := readIndex(filepath.Join(r.GitDir, "index"))
	if err != nil {
		return nil, err
	}
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

	byPath := make(map[string]*Entry, len(staged))
	var out []Entry
	for _, e := range staged {
		out = append(out, Entry{Path: e.Path, Staging: e.Staging, Worktree: ' '})
	}
	for i := range out {
		byPath[out[i].Path] = &out[i]
	}
	for i := range idx.entries {
		code := w.wt[i]
		if code == 0 {
			continue
		}
		e := &idx.entries[i]
		if p, ok := byPath[e.name]; ok {
			p.Worktree = code
			continue
		}
		out = append(out, Entry{Path: e.name, Staging: ' ', Worktree: code})
		byPath[e.name] = &out[len(out)-1]
	}
	out = append(out, unmergedEntries(idx)...)
	for _, p := range untracked {
		out = append(out, Entry{Path: p, Staging: '?', Worktree: '?'})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return !out[i].Untracked() && out[j].Untracked()
	})
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

// dirNode indexes the tracked paths of one directory.
type dirNode struct {
	files map[string]int // name → index of its (first) index entry
	dirs  map[string]*dirNode
}

func buildDirTree(entries []indexEntry) *dirNode {
	root := &dirNode{}
	lastDir, last := "", root
	for i := range entries {
		name := entries[i].name
		if i > 0 && entries[i-1].name == name {
			continue // another stage of a conflicted path
		}
		slash := strings.LastIndexByte(name, '/')
		dir := name[:slash+1]
		if dir != lastDir || last == nil {
			last = root
			for _, c := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
				if c == "" {
					continue
				}
				if last.dirs == nil {
					last.dirs = make(map[string]*dirNode)
				}
				n := last.dirs[c]
				if n == nil {
					n = &dirNode{}
					last.dirs[c] = n
				}
				last = n
			}
			lastDir = dir
		}
		if last.files == nil {
			last.files = make(map[string]int)
		}
		last.files[name[slash+1:]] = i
	}
	return root
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

	sem chan struct{}
	wg  sync.WaitGroup

	mu        sync.Mutex // guards untracked and err
	untracked []string
	err       error
}

func newWalker(ctx context.Context, r *Repo, idx *gitIndex) *walker {
	n := len(idx.entries)
	return &walker{
		ctx:      ctx,
		root:     r.Root + string(filepath.Separator),
		idx:      idx,
		fileMode: r.cfg.fileMode,
		racySec:  idx.mtime.Unix(),
		excl:     r.cfg.excludesFile,
		info:     filepath.Join(r.CommonDir, "info", "exclude"),
		wt:       make([]byte, n),
		seen:     make([]bool, n),
		// stat-bound work: more goroutines than cores keeps the disk queue full
		sem: make(chan struct{}, 4*runtime.GOMAXPROCS(0)),
	}
}

// run walks the working tree and returns the untracked paths.
func (w *walker) run() ([]string, error) {
	excludes := &ignoreList{patterns: readIgnoreFile(w.excludesFile(), false)}
	info := &ignoreList{parent: excludes, patterns: readIgnoreFile(w.infoExclude(), false)}
	w.spawn("", buildDirTree(w.idx.entries), info, true)
	w.wg.Wait()
	if w.err != nil {
		return nil, w.err
	}
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	for i := range w.idx.entries {
		e := &w.idx.entries[i]
		if !w.seen[i] && e.stage == 0 && !e.skipWorktree && !e.assumeValid &&
			(i == 0 || w.idx.entries[i-1].name != e.name) {
			w.wt[i] = 'D'
		}
	}
	return w.untracked, nil
}

func (w *walker) excludesFile() string { return w.excl }
func (w *walker) infoExclude() string  { return w.info }

func (w *walker) spawn(rel string, node *dirNode, ign *ignoreList, untracked bool) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.sem <- struct{}{}
		defer func() { <-w.sem }()
		if w.ctx.Err() != nil {
			return
		}
		w.dir(rel, node, ign, untracked)
	}()
}

// dir processes one directory: it compares the tracked files it holds,
// collects untracked ones (when untracked is set, i.e. the directory is not
// ignored) and spawns walks of its subdirectories.
func (w *walker) dir(rel string, node *dirNode, ign *ignoreList, untracked bool) {
	f, err := os.Open(w.root + rel)
	if err != nil {
		// Vanished or unreadable: its tracked entries stay unseen (deleted),
		// as git reports them when it cannot lstat them.
		return
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return
	}
	fd := int(f.Fd())
	if untracked {
		for _, de := range des {
			if de.Name() == ".gitignore" {
				if ps := readIgnoreFile(w.root+rel+".gitignore", true); len(ps) > 0 {
					ign = &ignoreList{parent: ign, base: rel, patterns: ps}
				}
				break
			}
		}
	}
	var found []string
	for _, de := range des {
		name := de.Name()
		if name == ".git" {
			continue
		}
		typ := de.Type()
		path := rel + name
		if node != nil {
			if i, ok := node.files[name]; ok {
				w.checkTracked(fd, name, i)
				if !typ.IsDir() || w.idx.entries[i].mode == modeGitlink {
					continue
				}
				// A tracked file replaced by a directory: the file is
				// deleted (checkTracked) and the directory is untracked.
			}
		}
		if typ.IsDir() {
			var sub *dirNode
			if node != nil {
				sub = node.dirs[name]
			}
			if sub != nil {
				w.spawn(path+"/", sub, ign, untracked && !ign.excluded(path, true))
				continue
			}
			if !untracked || ign.excluded(path, true) {
				continue
			}
			if isNestedRepo(fd, name) {
				found = append(found, path+"/")
				continue
			}
			w.spawn(path+"/", nil, ign, true)
			continue
		}
		if !untracked || (!typ.IsRegular() && typ&fs.ModeSymlink == 0) {
			continue
		}
		if !ign.excluded(path, false) {
			found = append(found, path)
		}
	}
	if len(found) > 0 {
		w.mu.Lock()
		w.untracked = append(w.untracked, found...)
		w.mu.Unlock()
	}
}

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
