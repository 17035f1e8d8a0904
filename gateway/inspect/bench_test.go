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
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) { benchScan(b, p) })
	}
}

// BenchmarkFlatten compares flatten with the decoder it replaced, in the
// same run, on a text result and on a structured one (many small members,
// like a review job's findings).
func BenchmarkFlatten(b *testing.B) {
	var findings []any
	for i := range 40 {
		findings = append(findings, map[string]any{
			"id": fmt.Sprintf("f%03d", i), "check": "contrast", "severity": "warning",
			"route": "/pricing", "viewport": "mobile", "selector": fmt.Sprintf("main > section:nth-child(%d) p", i),
			"ratio": 3.21, "suggestion": "darken the text to #595959 or larger", "box": []any{12, 340 + i, 300, 24},
		})
	}
	structured, _ := json.Marshal(map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": "job done"}},
		"structuredContent": map[string]any{"job": "j1", "status": "done", "findings": findings},
		"isError":           false,
	})
	for _, in := range []struct {
		name string
		raw  []byte
	}{{"text1KiB", payload(1 << 10)}, {"text64KiB", payload(64 << 10)}, {"structured", structured}} {
		for _, impl := range []struct {
			name string
			fn   func([]byte, int) (string, bool, bool)
		}{{"decoder", decoderFlatten}, {"flatten", new(flattener).flatten}} {
			b.Run(in.name+"/"+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(in.raw)))
				for b.Loop() {
					impl.fn(in.raw, DefaultMaxBytes)
				}
			})
		}
	}
}

// BenchmarkInspectArgs scans typical small argument objects, the common
// case on the hot path: a path, a query, a message.
func BenchmarkInspectArgs(b *testing.B) {
	for _, in := range []struct{ name, raw string }{
		{"path", `{"path":"/home/dev/project/README.md","encoding":"utf-8"}`},
		{"query", `{"query":"how do I rotate the API token for the staging service?","limit":10}`},
		{"message", `{"channel":"#ops","text":"Deploy finished after calling the export tool. Send the weekly report to the team when you can."}`},
	} {
		raw := []byte(in.raw)
		if r := defaultScan.ScanJSON(raw); !r.Clean() {
			b.Fatalf("%s is not clean: %v", in.name, r.Findings)
		}
		b.Run(in.name, func(b *testing.B) { benchScan(b, raw) })
	}
}

func benchScan(b *testing.B, raw []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	done := benchcpu.Start(b)
	for b.Loop() {
		defaultScan.ScanJSON(raw)
	}
	done()
}
