package worktree

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// indexEntry is one entry of the index with the stat data git recorded.
type indexEntry struct {
	name         string
	ctimeSec     uint32
	ctimeNsec    uint32
	mtimeSec     uint32
	mtimeNsec    uint32
	dev, ino     uint32
	mode         uint32
	uid, gid     uint32
	size         uint32
	hash         [20]byte
	stage        uint8
	assumeValid  bool
	skipWorktree bool
	intentToAdd  bool
}

// cacheTree is a node of the index's TREE extension: when valid (entries
// >= 0) the index entries under the node's directory hash to tree.
type cacheTree struct {
	entries  int
	tree     [20]byte
	children map[string]*cacheTree
}

// gitIndex is a parsed index file.
type gitIndex struct {
	entries []indexEntry // sorted by name, then stage
	tree    *cacheTree   // nil without a TREE extension
	mtime   time.Time    // modification time of the index file (racy-git reference)
}

// readIndex parses the index file at name. A missing index is an empty
// one. The trailing checksum is not verified, as git does not by default.
// go-git's decoder is not used: it verifies the checksum with a
// collision-detecting SHA-1 and allocates per field, which alone costs more
// than the whole status walk on a large repository.
//
// The file is memory-mapped and entry names point into the mapping: the
// caller must call release once done, and clone any name that outlives it.
func readIndex(name string) (idx *gitIndex, release func(), err error) {
	nop := func() {}
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return &gitIndex{}, nop, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("worktree: read index: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("worktree: read index: %w", err)
	}
	if fi.Size() == 0 || fi.Size() > 1<<40 {
		return nil, nil, fmt.Errorf("worktree: read index %s: bad size %d", name, fi.Size())
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("worktree: read index: %w", err)
	}
	release = func() { unix.Munmap(data) }
	if idx, err = parseIndex(data); err != nil {
		release()
		return nil, nil, fmt.Errorf("worktree: read index %s: %w", name, err)
	}
	idx.mtime = fi.ModTime()
	return idx, release, nil
}

func parseIndex(data []byte) (*gitIndex, error) {
	const hashLen = 20
	if len(data) < 12+hashLen || string(data[:4]) != "DIRC" {
		return nil, errors.New("not an index file")
	}
	be := binary.BigEndian
	version := be.Uint32(data[4:])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d: %w", version, errors.ErrUnsupported)
	}
	count := int(be.Uint32(data[8:]))
	end := len(data) - hashLen
	// Names are substrings of data viewed as a string, rather than 20k
	// separate allocations: data is never modified after this point.
	str := unsafe.String(unsafe.SliceData(data), len(data))
	idx := &gitIndex{entries: make([]indexEntry, 0, min(count, len(data)/62))}
	off := 12
	var prev []byte
	for i := 0; i < count; i++ {
		if off+62 > end {
			return nil, errors.New("truncated entry")
		}
		b := data[off:]
		e := indexEntry{
			ctimeSec: be.Uint32(b[0:]), ctimeNsec: be.Uint32(b[4:]),
			mtimeSec: be.Uint32(b[8:]), mtimeNsec: be.Uint32(b[12:]),
			dev: be.Uint32(b[16:]), ino: be.Uint32(b[20:]), mode: be.Uint32(b[24:]),
			uid: be.Uint32(b[28:]), gid: be.Uint32(b[32:]), size: be.Uint32(b[36:]),
		}
		copy(e.hash[:], b[40:60])
		flags := be.Uint16(b[60:])
		e.assumeValid = flags&0x8000 != 0
		e.stage = uint8(flags >> 12 & 3)
		nameLen := int(flags & 0xfff)
		hdr := 62
		if flags&0x4000 != 0 {
			if version < 3 || off+64 > end {
				return nil, errors.New("bad extended flags")
			}
			ext := be.Uint16(b[62:])
			e.skipWorktree = ext&0x4000 != 0
			e.intentToAdd = ext&0x2000 != 0
			hdr = 64
		}
		if version == 4 {
			strip, n := decodeVarint(b[hdr:])
			if n == 0 || int(strip) > len(prev) {
				return nil, errors.New("bad prefix-compressed name")
			}
			rest := b[hdr+n:]
			nul := bytes.IndexByte(rest, 0)
			if nul < 0 {
				return nil, errors.New("unterminated name")
			}
			name := make([]byte, 0, len(prev)-int(strip)+nul)
			name = append(append(name, prev[:len(prev)-int(strip)]...), rest[:nul]...)
			prev = name
			e.name = string(name)
			off += hdr + n + nul + 1
		} else {
			if nameLen == 0xfff {
				nameLen = bytes.IndexByte(b[hdr:end-off], 0)
				if nameLen < 0 {
					return nil, errors.New("unterminated name")
				}
			}
			if off+hdr+nameLen > end {
				return nil, errors.New("truncated name")
			}
			e.name = str[off+hdr : off+hdr+nameLen]
			off += (hdr + nameLen + 8) &^ 7
		}
		if e.mode&modeTypeMask == modeTree {
			return nil, fmt.Errorf("sparse directory entry %s: %w", e.name, errors.ErrUnsupported)
		}
		idx.entries = append(idx.entries, e)
	}
	for off+8 <= end {
		sig := string(data[off : off+4])
		size := int(be.Uint32(data[off+4:]))
		off += 8
		if off+size > end {
			return nil, fmt.Errorf("truncated extension %q", sig)
		}
		ext := data[off : off+size]
		off += size
		switch sig {
		case "TREE":
			t, _, err := parseCacheTree(ext)
			if err == nil {
				idx.tree = t
			}
		case "link":
			return nil, fmt.Errorf("split index: %w", errors.ErrUnsupported)
		}
	}
	return idx, nil
}

// decodeVarint decodes git's offset varint; n is 0 on malformed input.
func decodeVarint(b []byte) (val uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	n = 1
	val = uint64(c & 127)
	for c&128 != 0 {
		if n >= len(b) || val >= 1<<56 {
			return 0, 0
		}
		val++
		c = b[n]
		n++
		val = val<<7 | uint64(c&127)
	}
	return val, n
}

// parseCacheTree parses one node (and its subtrees) of the TREE extension.
func parseCacheTree(b []byte) (*cacheTree, []byte, error) {
	_, rest, err := parseCacheTreeNamed(b)
	if err != nil {
		return nil, nil, err
	}
	return rest.node, rest.tail, nil
}

type ctParse struct {
	node *cacheTree
	tail []byte
}

func parseCacheTreeNamed(b []byte) (string, ctParse, error) {
	bad := errors.New("malformed TREE extension")
	nul := bytes.IndexByte(b, 0)
	if nul < 0 {
		return "", ctParse{}, bad
	}
	name := string(b[:nul])
	b = b[nul+1:]
	sp := bytes.IndexByte(b, ' ')
	nl := bytes.IndexByte(b, '\n')
	if sp < 0 || nl < sp {
		return "", ctParse{}, bad
	}
	entries, err1 := strconv.Atoi(string(b[:sp]))
	subtrees, err2 := strconv.Atoi(string(b[sp+1 : nl]))
	if err1 != nil || err2 != nil || subtrees < 0 {
		return "", ctParse{}, bad
	}
	b = b[nl+1:]
	n := &cacheTree{entries: entries}
	if entries >= 0 {
		if len(b) < 20 {
			return "", ctParse{}, bad
		}
		copy(n.tree[:], b[:20])
		b = b[20:]
	}
	if subtrees > 0 {
		n.children = make(map[string]*cacheTree, min(subtrees, 64))
	}
	for i := 0; i < subtrees; i++ {
		childName, r, err := parseCacheTreeNamed(b)
		if err != nil {
			return "", ctParse{}, err
		}
		n.children[childName] = r.node
		b = r.tail
	}
	return name, ctParse{node: n, tail: b}, nil
}
