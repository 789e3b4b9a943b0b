package worktree

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// packIndex is a loaded version-2 pack index (.idx) and its pack's path.
type packIndex struct {
	pack string
	data []byte
	n    int
}

// loadPacks reads every pack index of the repository once per Repo.
// Reading them whole is cheaper than go-git's decoding of the same files
// into maps, which it repeats for every new storage.
func (r *Repo) loadPacks() []packIndex {
	r.packsOnce.Do(func() {
		dir := filepath.Join(r.CommonDir, "objects", "pack")
		des, _ := os.ReadDir(dir)
		for _, de := range des {
			name, ok := strings.CutSuffix(de.Name(), ".idx")
			if !ok {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, de.Name()))
			if err != nil || len(data) < 8+1024 || !bytes.Equal(data[:8], []byte("\xfftOc\x00\x00\x00\x02")) {
				continue
			}
			n := int(binary.BigEndian.Uint32(data[8+255*4:]))
			if len(data) < 8+1024+n*28 {
				continue
			}
			r.packs = append(r.packs, packIndex{pack: filepath.Join(dir, name+".pack"), data: data, n: n})
		}
	})
	return r.packs
}

// find returns the pack offset of h, or -1.
func (p *packIndex) find(h [20]byte) int64 {
	be := binary.BigEndian
	lo := 0
	if h[0] > 0 {
		lo = int(be.Uint32(p.data[8+4*int(h[0]-1):]))
	}
	hi := int(be.Uint32(p.data[8+4*int(h[0]):]))
	names := p.data[8+1024:]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(names[m*20:m*20+20], h[:]); {
		case c == 0:
			off := be.Uint32(p.data[8+1024+p.n*24+m*4:])
			if off&0x80000000 == 0 {
				return int64(off)
			}
			at := 8 + 1024 + p.n*28 + int(off&0x7fffffff)*8
			if at+8 > len(p.data) {
				return -1
			}
			return int64(be.Uint64(p.data[at:]))
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// packedObject reads h from a pack when it is stored whole (not as a
// delta); ok is false otherwise, and the caller falls back to go-git.
func (r *Repo) packedObject(h [20]byte) (t plumbing.ObjectType, data []byte, ok bool) {
	for i := range r.loadPacks() {
		p := &r.packs[i]
		off := p.find(h)
		if off < 0 {
			continue
		}
		f, err := os.Open(p.pack)
		if err != nil {
			return 0, nil, false
		}
		defer f.Close()
		var hdr [16]byte
		n, _ := f.ReadAt(hdr[:], off)
		if n == 0 {
			return 0, nil, false
		}
		c := hdr[0]
		typ := plumbing.ObjectType(c >> 4 & 7)
		size := int64(c & 15)
		shift, k := 4, 1
		for c&0x80 != 0 && k < n {
			c = hdr[k]
			size |= int64(c&0x7f) << shift
			shift += 7
			k++
		}
		if c&0x80 != 0 || typ < plumbing.CommitObject || typ > plumbing.TagObject {
			return 0, nil, false // a delta, or malformed
		}
		zr, err := zlib.NewReader(io.NewSectionReader(f, off+int64(k), 1<<62))
		if err != nil {
			return 0, nil, false
		}
		data = make([]byte, size)
		if _, err := io.ReadFull(zr, data); err != nil {
			return 0, nil, false
		}
		return typ, data, true
	}
	return 0, nil, false
}
