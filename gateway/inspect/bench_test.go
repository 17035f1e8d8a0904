package inspect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/gateway/internal/benchcpu"
)

// prose is ordinary tool output: text that mentions users, tokens, keys
// and tools, so keyword windows open, with nothing to find.
const prose = `The user opened the settings page and the tool returned 14 results. ` +
	`Each API key is rotated every 90 days; see the token documentation for details. ` +
	`function render(user) { return "<div class=card>" + user.name + "</div>"; } ` +
	`Send the weekly report to the team channel after calling the export tool. ` +
	`Password rules: at least 12 characters. The system is now in read-only mode for maintenance. `

func payload(size int) []byte {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%d. %s\n", i, prose)
	}
	text := b.String()[:size]
	raw, _ := json.Marshal(map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text}},
		"isError": false,
	})
	return raw
}

func BenchmarkInspect(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		p := payload(size)
		if r := defaultScan.ScanJSON(p); !r.Clean() {
			b.Fatalf("benchmark payload is not clean: %v", r.Findings)
		}
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(p)))
			done := benchcpu.Start(b)
			for b.Loop() {
				defaultScan.ScanJSON(p)
			}
			done()
		})
	}
}
