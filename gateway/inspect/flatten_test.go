package inspect

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// decoderFlatten is the flattening flatten replaced, kept as its oracle:
// encoding/json's Unmarshal into an any, then a walk of the value.
func decoderFlatten(raw []byte, max int) (text string, over, ok bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false, false
	}
	var b strings.Builder
	over = walkDecoded(&b, v, max)
	return b.String(), over, true
}

func walkDecoded(b *strings.Builder, v any, max int) bool {
	if b.Len() > max {
		return true
	}
	switch t := v.(type) {
	case string:
		b.WriteString(t)
		b.WriteByte('\n')
	case []any:
		for _, e := range t {
			if walkDecoded(b, e, max) {
				return true
			}
		}
	case map[string]any:
		media := t["type"] == "image" || t["type"] == "audio"
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if media && k == "data" {
				continue
			}
			switch e := t[k].(type) {
			case string:
				fmt.Fprintf(b, "%s: %s\n", k, e)
			case float64, bool, nil:
				fmt.Fprintf(b, "%s: %v\n", k, e)
			default:
				b.WriteString(k)
				b.WriteByte('\n')
				if walkDecoded(b, e, max) {
					return true
				}
			}
		}
	}
	return b.Len() > max
}

// reused is shared by every check, so parsers left by earlier inputs are
// reused as the Scanner reuses them.
var reused flattener

// sameScan checks flatten against the oracle: both accept or refuse
// raw, and the scanner sees the same text (the first max bytes) and the same
// oversize verdict.
func sameScan(t *testing.T, raw []byte, max int) {
	t.Helper()
	got, gotOver, gotOK := reused.flatten(raw, max)
	want, wantOver, wantOK := decoderFlatten(raw, max)
	in := raw[:min(len(raw), 300)] // long inputs are named by their start
	if gotOK != wantOK {
		t.Fatalf("flatten(%q) ok = %v, encoding/json ok = %v", in, gotOK, wantOK)
	}
	if got, want := got[:min(len(got), max)], want[:min(len(want), max)]; got != want || gotOver != wantOver {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("flatten(%q, %d): text differs from byte %d\n got %q over=%v\nwant %q over=%v",
			in, max, i, got[i:min(len(got), i+200)], gotOver, want[i:min(len(want), i+200)], wantOver)
	}
}

var flattenCases = []string{
	`{"content":[{"type":"text","text":"hello"}],"isError":false}`,
	`{"b":1,"a":{"d":[1,"x",{"z":null}],"c":true},"e":-0,"f":1e6,"g":123456789,"h":0.000001,"i":1.5e-7,"j":1e21,"k":12345678901234567890}`,
	`{"a":1,"a":"two","b":{"x":1},"b":[1]}`,
	`{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}`,
	`{"type":"audio","data":{"nested":"x"}}`,
	`{"type":"image","type":"text","data":"kept"}`,
	`{"type":"text","type":"image","data":"dropped"}`,
	`{"type":1,"data":"kept"}`,
	`"top level string"`,
	` 42 `, `true`, `null`, `[]`, `{}`, `[1,true,null,"s",[["deep"]]]`,
	`"esc \" \\ \/ \b \f \n \r \t \u0041 \u00e9 \ud83d\ude00 \ud83d \ude00 \ud83d\u0041 \udc00\ud800"`,
	"\"bad utf8 \xff\xfe and surrogate \xed\xa0\x80 and ok \xc3\xa9\"",
	"{\"k\xff\":\"v\",\"k\\u00ff\":\"w\"}",
	`{"":"empty key","\u0000":"nul"}`,
	// Refused as encoding/json refuses them.
	``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `01`, `-`, `1.`, `1e`, `.5`, `+1`, `1e400`, `-1e400`, `1e-400`,
	`"\'"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"tab\there\"", `tru`, `nul`, `[1] [2]`, `{"a":1}x`, "\xef\xbb\xbf{}",
	`[1 2]`, `{1:2}`, `"unterminated`, `{"a":"b"`, `NaN`, `Infinity`,
}

func TestFlattenMatchesDecoder(t *testing.T) {
	for _, c := range flattenCases {
		for _, max := range []int{0, 1, 7, 30, DefaultMaxBytes} {
			sameScan(t, []byte(c), max)
		}
	}
	// encoding/json's nesting limit is 10000 containers.
	for _, depth := range []int{9999, 10000, 10001} {
		deep := strings.Repeat(`[{"a":`, depth/2) + strings.Repeat("[", depth%2) + `"x"` +
			strings.Repeat("]", depth%2) + strings.Repeat("}]", depth/2)
		sameScan(t, []byte(deep), DefaultMaxBytes)
	}
}

func TestFlattenKeepsMemberOrderStable(t *testing.T) {
	// Many members with unsorted and repeated keys, nested in both kinds.
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 300 {
		fmt.Fprintf(&b, `"k%d":{"v":%d,"w":[%d,"s%d"]},"k%d":%d,`, (i*37)%101, i, i, i, (i*13)%97, i)
	}
	b.WriteString(`"end":"yes"}`)
	sameScan(t, []byte(b.String()), DefaultMaxBytes)
	sameScan(t, []byte(b.String()), 500)
}

func FuzzFlattenMatchesDecoder(f *testing.F) {
	for _, c := range flattenCases {
		f.Add([]byte(c), uint16(64))
	}
	f.Add(payload(2<<10), uint16(100))
	f.Fuzz(func(t *testing.T, raw []byte, max uint16) {
		sameScan(t, raw, int(max))
		sameScan(t, raw, DefaultMaxBytes)
	})
}
