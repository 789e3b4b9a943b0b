package proposal

import (
	"testing"

	"github.com/yuin/goldmark/text"
)

// BenchmarkScannerStream1MiB streams a 1 MiB response through a Scanner in
// 1 KiB chunks. Compare with BenchmarkGoldmarkParse1MiB: the budget is 3×.
func BenchmarkScannerStream1MiB(b *testing.B) {
	in := bigResponse(1 << 20)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		s := NewScanner()
		for rest := in; rest != ""; {
			n := min(1024, len(rest))
			s.Write(rest[:n])
			rest = rest[n:]
		}
		if s.Close().Proposal == nil {
			b.Fatal("no proposal")
		}
	}
}

// BenchmarkGoldmarkParse1MiB is one goldmark (GFM) parse of the same text.
func BenchmarkGoldmarkParse1MiB(b *testing.B) {
	in := []byte(bigResponse(1 << 20))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		markdown.Parser().Parse(text.NewReader(in))
	}
}
