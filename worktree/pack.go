package worktree

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// packIndex is a loaded version-2 pack index (.idx) and its pack, mapped
// into memory when possible.
type packIndex struct {
	pack string
	idx  []byte
	n    int
	data []byte // the mapped .pack, or nil: then it is read with pread
}

// mappings owns the memory maps of a Repo's packs; release is idempotent so
// that Close and the garbage-collection cleanup can both call it.
type mappings struct {
	once    sync.Once
	regions [][]byte
}

func (m *mappings) release() {
	m.once.Do(func() {
		for _, b := range m.regions {
			unix.Munmap(b)
		}
	})
}

// loadPacks reads every pack index of the repository and maps the packs,
// once per Repo. Reading indexes whole is cheaper than go-git's decoding of
// the same files into maps, which it repeats for every new storage.
func (r *Repo) loadPacks() []packIndex {
	r.packsOnce.Do(func() {
		dir := filepath.Join(r.CommonDir, "objects", "pack")
		des, _ := os.ReadDir(dir)
		m := &mappings{}
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
			p := packIndex{pack: filepath.Join(dir, name+".pack"), idx: data, n: n}
			if f, err := os.Open(p.pack); err == nil {
				if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < 1<<40 {
					if b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED); err == nil {
						p.data = b
						m.regions = append(m.regions, b)
					}
				}
				f.Close()
			}
			r.packs = append(r.packs, p)
		}
		r.maps = m
		if len(m.regions) > 0 {
			runtime.AddCleanup(r, func(m *mappings) { m.release() }, m)
		}
	})
	return r.packs
}

// Close releases the memory maps of pack files. It must not run
// concurrently with other methods; the Repo must not be used afterwards.
// A Repo that is never closed releases them when garbage collected.
func (r *Repo) Close() error {
	r.packsOnce.Do(func() {}) // no loading after Close
	if r.maps != nil {
		r.maps.release()
	}
	r.packs = nil
	return nil
}

// find returns the pack offset of h, or -1.
func (p *packIndex) find(h [20]byte) int64 {
	be := binary.BigEndian
	lo := 0
	if h[0] > 0 {
		lo = int(be.Uint32(p.idx[8+4*int(h[0]-1):]))
	}
	hi := int(be.Uint32(p.idx[8+4*int(h[0]):]))
	names := p.idx[8+1024:]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(names[m*20:m*20+20], h[:]); {
		case c == 0:
			off := be.Uint32(p.idx[8+1024+p.n*24+m*4:])
			if off&0x80000000 == 0 {
				return int64(off)
			}
			at := 8 + 1024 + p.n*28 + int(off&0x7fffffff)*8
			if at+8 > len(p.idx) {
				return -1
			}
			return int64(be.Uint64(p.idx[at:]))
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// inflater decompresses objects, reusing its zlib state between calls.
type inflater struct {
	zr     io.ReadCloser
	cache  map[int64]cachedObject // delta bases by pack offset
	cached int                    // bytes in cache
}

// inflate reads exactly size bytes of the zlib stream z into a new slice.
func (in *inflater) inflate(z io.Reader, size int64) ([]byte, error) {
	if in.zr == nil {
		zr, err := zlib.NewReader(z)
		if err != nil {
			return nil, err
		}
		in.zr = zr
	} else if err := in.zr.(zlib.Resetter).Reset(z, nil); err != nil {
		return nil, err
	}
	// The size comes from the pack: trust it for the allocation only up
	// to a bound, so a corrupt header cannot exhaust memory.
	buf := bytes.NewBuffer(make([]byte, 0, min(size, 64<<20)))
	if n, err := io.CopyN(buf, in.zr, size); err != nil || n != size {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("inflate: %d of %d bytes: %w", n, size, err)
	}
	return buf.Bytes(), nil
}

// packedObject reads h from a mapped pack, resolving deltas; ok is false
// when no mapped pack has it, and the caller falls back to loose objects
// and go-git.
func (r *Repo) packedObject(h [20]byte) (t plumbing.ObjectType, data []byte, ok bool) {
	p, off := r.locate(h)
	if p == nil {
		return 0, nil, false
	}
	var in inflater
	t, data, err := r.resolve(p, off, &in, 0)
	if err != nil {
		return 0, nil, false
	}
	return t, data, true
}

// Pack entry types that are deltas.
const (
	packOfsDelta = 6
	packRefDelta = 7
)

// locate returns the mapped pack holding h and its offset there.
func (r *Repo) locate(h [20]byte) (*packIndex, int64) {
	for i := range r.loadPacks() {
		p := &r.packs[i]
		if p.data == nil {
			continue
		}
		if off := p.find(h); off >= 0 {
			return p, off
		}
	}
	return nil, -1
}

// entryHeader parses the pack entry header at off: its type, its size
// (inflated size, or delta size for deltas) and where its data starts.
func (p *packIndex) entryHeader(off int64) (t int, size int64, dataOff int64, ok bool) {
	if off < 0 || off >= int64(len(p.data)) {
		return 0, 0, 0, false
	}
	b := p.data[off:]
	c := b[0]
	t = int(c >> 4 & 7)
	size = int64(c & 15)
	shift, k := 4, 1
	for c&0x80 != 0 {
		if k >= len(b) || shift > 56 {
			return 0, 0, 0, false
		}
		c = b[k]
		size |= int64(c&0x7f) << shift
		shift += 7
		k++
	}
	return t, size, off + int64(k), true
}

// resolve returns the type and content of the object at off in the mapped
// pack p, applying deltas (bases are cached in the inflater).
func (r *Repo) resolve(p *packIndex, off int64, in *inflater, depth int) (plumbing.ObjectType, []byte, error) {
	if depth > 10000 {
		return 0, nil, errors.New("delta chain too deep")
	}
	if in.cache != nil {
		if e, ok := in.cache[off]; ok {
			return e.t, e.data, nil
		}
	}
	t, size, dataOff, ok := p.entryHeader(off)
	if !ok {
		return 0, nil, errors.New("malformed pack entry")
	}
	var (
		baseT    plumbing.ObjectType
		base     []byte
		err      error
		deltaOff = dataOff
	)
	switch t {
	case int(plumbing.CommitObject), int(plumbing.TreeObject), int(plumbing.BlobObject), int(plumbing.TagObject):
		data, err := in.inflate(bytes.NewReader(p.data[dataOff:]), size)
		if err != nil {
			return 0, nil, err
		}
		return plumbing.ObjectType(t), data, nil
	case packOfsDelta:
		b := p.data[dataOff:]
		if len(b) == 0 {
			return 0, nil, errors.New("truncated delta")
		}
		c := b[0]
		rel := int64(c & 127)
		k := 1
		for c&0x80 != 0 {
			if k >= len(b) || rel > 1<<55 {
				return 0, nil, errors.New("malformed delta offset")
			}
			c = b[k]
			rel = (rel+1)<<7 | int64(c&127)
			k++
		}
		deltaOff = dataOff + int64(k)
		baseOff := off - rel
		baseT, base, err = r.resolve(p, baseOff, in, depth+1)
		if err == nil {
			in.remember(baseOff, baseT, base)
		}
	case packRefDelta:
		if dataOff+20 > int64(len(p.data)) {
			return 0, nil, errors.New("truncated delta")
		}
		var bh [20]byte
		copy(bh[:], p.data[dataOff:dataOff+20])
		deltaOff = dataOff + 20
		if bo := p.find(bh); bo >= 0 {
			baseT, base, err = r.resolve(p, bo, in, depth+1)
			if err == nil {
				in.remember(bo, baseT, base)
			}
		} else {
			baseT, base, err = r.readObject(bh)
		}
	default:
		return 0, nil, fmt.Errorf("pack entry type %d", t)
	}
	if err != nil {
		return 0, nil, err
	}
	delta, err := in.inflate(bytes.NewReader(p.data[deltaOff:]), size)
	if err != nil {
		return 0, nil, err
	}
	data, err := applyDelta(base, delta)
	if err != nil {
		return 0, nil, err
	}
	return baseT, data, nil
}

// remember caches a delta base, keeping the cache small.
func (in *inflater) remember(off int64, t plumbing.ObjectType, data []byte) {
	if in.cache == nil {
		in.cache = make(map[int64]cachedObject)
	}
	if len(in.cache) >= 256 || in.cached+len(data) > 32<<20 {
		clear(in.cache)
		in.cached = 0
	}
	in.cache[off] = cachedObject{t, data}
	in.cached += len(data)
}

type cachedObject struct {
	t    plumbing.ObjectType
	data []byte
}

// applyDelta applies a git delta to base.
func applyDelta(base, delta []byte) ([]byte, error) {
	bad := errors.New("malformed delta")
	varint := func() (int, bool) {
		v, shift := 0, 0
		for {
			if len(delta) == 0 || shift > 56 {
				return 0, false
			}
			c := delta[0]
			delta = delta[1:]
			v |= int(c&0x7f) << shift
			shift += 7
			if c&0x80 == 0 {
				return v, true
			}
		}
	}
	srcSize, ok1 := varint()
	dstSize, ok2 := varint()
	if !ok1 || !ok2 || srcSize != len(base) {
		return nil, bad
	}
	out := make([]byte, 0, min(dstSize, len(base)+len(delta)*64))
	for len(delta) > 0 {
		if len(out) > dstSize {
			return nil, bad
		}
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0:
			var off, n int
			for i := 0; i < 4; i++ {
				if op&(1<<i) != 0 {
					if len(delta) == 0 {
						return nil, bad
					}
					off |= int(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			for i := 0; i < 3; i++ {
				if op&(0x10<<i) != 0 {
					if len(delta) == 0 {
						return nil, bad
					}
					n |= int(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > len(base) || off+n < off {
				return nil, bad
			}
			out = append(out, base[off:off+n]...)
		case op != 0:
			if int(op) > len(delta) {
				return nil, bad
			}
			out = append(out, delta[:op]...)
			delta = delta[op:]
		default:
			return nil, bad
		}
	}
	if len(out) != dstSize {
		return nil, bad
	}
	return out, nil
}
