package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestStdioAnswersAPipe: a client that writes its requests and closes stdin
// at once (`printf … | bastion stdio`) gets an answer to every request
// before the process exits, not silence.
func TestStdioAnswersAPipe(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"design_review_get","arguments":{"job_id":"job_00000000-0000-0000-0000-000000000000"}}}`,
	}, "\n") + "\n"
	cmd := cliCommand("stdio", "--data-dir", t.TempDir())
	cmd.Stdin = strings.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bastion stdio: %v\n%s", err, stderr.String())
	}
	answered := map[float64]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var msg struct {
			ID     *float64        `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("not JSON-RPC: %q", sc.Text())
		}
		if msg.ID != nil && (msg.Result != nil || msg.Error != nil) {
			answered[*msg.ID] = true
		}
	}
	for _, id := range []float64{1, 2, 3} {
		if !answered[id] {
			t.Errorf("request %v was not answered; stdout:\n%s\nstderr:\n%s", id, out, stderr.String())
		}
	}
}
