package app

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/store/sqlite"
)

// logLines decodes buf's JSON lines.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON log line: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// routine runs what every start does through a logger at level: River's
// migrations (a new SQLite store) and an MCP session (the SDK's
// lifecycle), plus one line of bastion's own.
func routine(t *testing.T, level slog.Level) []map[string]any {
	t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "json", level)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, sqlite.PathIn(t.TempDir()), sqlite.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{Logger: log})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
	ss.Wait()
	log.Info("bastion: serving")
	return logLines(t, &buf)
}

// TestLoggerQuietByDefault: at INFO a start writes bastion's own line and
// none of River's migrations or the SDK's session lifecycle; at DEBUG those
// are there, at DEBUG, so nothing was lost.
func TestLoggerQuietByDefault(t *testing.T) {
	t.Parallel()
	info := routine(t, slog.LevelInfo)
	if len(info) != 1 || info[0]["msg"] != "bastion: serving" || info[0]["level"] != "INFO" {
		t.Errorf("at INFO, the log is %v; want only bastion's own line", info)
	}
	var river, sdk int
	for _, l := range routine(t, slog.LevelDebug) {
		msg, _ := l["msg"].(string)
		switch {
		case strings.HasPrefix(msg, "rivermigrate"):
			river++
		case strings.Contains(msg, "session"):
			sdk++
		default:
			continue
		}
		if l["level"] != "DEBUG" {
			t.Errorf("library line %v at %v, want DEBUG", msg, l["level"])
		}
	}
	if river == 0 || sdk == 0 {
		t.Errorf("at DEBUG: %d River migration and %d SDK session lines, want some of each", river, sdk)
	}
}

// TestLoggerDemotesUndeliveredListChanged: the SDK's WARN about a
// list_changed it could not deliver is DEBUG; its other warnings and
// bastion's own stay WARN. The records carry the PC of an SDK function, as
// the SDK's own calls do.
func TestLoggerDemotesUndeliveredListChanged(t *testing.T) {
	t.Parallel()
	sdkPC := reflect.ValueOf(mcp.NewServer).Pointer()
	ourPC := reflect.ValueOf(NewLogger).Pointer()
	for _, tc := range []struct {
		pc        uintptr
		msg, want string
	}{
		{sdkPC, "calling notifications/tools/list_changed: connection closed", "DEBUG"},
		{sdkPC, "calling notifications/prompts/list_changed: session is closing", "DEBUG"},
		{sdkPC, "keepalive ping failed; tolerating below threshold", "WARN"},
		{sdkPC, "calling notifications/progress: connection closed", "WARN"},
		{ourPC, "calling notifications/tools/list_changed: connection closed", "WARN"},
	} {
		var buf bytes.Buffer
		log, _ := NewLogger(&buf, "json", slog.LevelDebug)
		log.Handler().Handle(context.Background(), slog.NewRecord(time.Now(), slog.LevelWarn, tc.msg, tc.pc))
		lines := logLines(t, &buf)
		if len(lines) != 1 || lines[0]["level"] != tc.want {
			t.Errorf("%q: %v, want one line at %s", tc.msg, lines, tc.want)
		}
		buf.Reset()
		quietLog, _ := NewLogger(&buf, "text", slog.LevelInfo)
		quietLog.Handler().Handle(context.Background(), slog.NewRecord(time.Now(), slog.LevelWarn, tc.msg, tc.pc))
		if got := buf.Len() > 0; got != (tc.want == "WARN") {
			t.Errorf("%q at INFO: written %t (%q)", tc.msg, got, buf.String())
		}
	}
}

func TestNewLoggerFormats(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	text, err := NewLogger(&buf, "text", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	text.Info("hello", "k", "v")
	if got := buf.String(); !strings.Contains(got, "level=INFO msg=hello k=v") {
		t.Errorf("text line %q", got)
	}
	if _, err := NewLogger(&buf, "yaml", slog.LevelInfo); err == nil || !strings.Contains(err.Error(), "want text or json") {
		t.Errorf("NewLogger(yaml) error %v", err)
	}
	if _, err := ParseLogLevel("loud"); err == nil {
		t.Error("ParseLogLevel(loud) accepted")
	}
}
