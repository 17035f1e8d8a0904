package app

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/tracing"
)

// LogFormats are the values of --log-format: slog's TextHandler
// (key=value, the default) and its JSONHandler (one object per line).
var LogFormats = []string{"text", "json"}

// NewLogger returns the logger every command writes to w: format is one of
// LogFormats ("" means text) and level the least level written. A record
// logged inside a span carries its trace_id and span_id
// (tracing.NewLogHandler).
//
// It is quiet by default: what the libraries bastion embeds say at INFO
// about their own routine (River's migrations and client start and stop on
// every start, the MCP SDK's session lifecycle) is written at DEBUG, and so
// is the SDK's WARN about a list_changed notification it could not deliver
// (a session that already left, or a stateless request's server, which has
// no stream to deliver on). Nothing is dropped: --log-level debug shows it.
func NewLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch format {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fault.New(fault.InvalidArgument, "unknown --log-format %q (want text or json)", format)
	}
	return slog.New(quiet{tracing.NewLogHandler(h)}), nil
}

// ParseLogLevel parses --log-level: debug, info, warn or error.
func ParseLogLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return 0, fault.New(fault.InvalidArgument, "unknown --log-level %q (want debug, info, warn or error)", s)
	}
	return level, nil
}

// chattyModules are the libraries whose INFO records are their own
// routine, not the operator's news.
var chattyModules = []string{
	"github.com/riverqueue/river",
	"github.com/modelcontextprotocol/go-sdk",
}

// sdkModule is the MCP SDK, whose undelivered-notification WARN is
// demoted too.
const sdkModule = "github.com/modelcontextprotocol/go-sdk"

// quiet demotes the records described at NewLogger to DEBUG. It decides by
// the function that logged (the record's PC), so bastion's own INFO lines
// are never touched and a library's WARN and ERROR stay what they are,
// except the one SDK warning named above.
type quiet struct{ h slog.Handler }

// Enabled is the inner handler's: a record that may be demoted is first
// let through and judged again in Handle at its new level.
func (q quiet) Enabled(ctx context.Context, l slog.Level) bool { return q.h.Enabled(ctx, l) }

func (q quiet) Handle(ctx context.Context, r slog.Record) error {
	if demote(r) {
		if !q.h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r = r.Clone()
		r.Level = slog.LevelDebug
	}
	return q.h.Handle(ctx, r)
}

func (q quiet) WithAttrs(as []slog.Attr) slog.Handler { return quiet{q.h.WithAttrs(as)} }
func (q quiet) WithGroup(name string) slog.Handler    { return quiet{q.h.WithGroup(name)} }

// demote reports whether r is library routine logged at INFO, or the SDK's
// warning about a notification it could not send ("calling
// notifications/tools/list_changed: ...").
func demote(r slog.Record) bool {
	if r.PC == 0 || (r.Level != slog.LevelInfo && r.Level != slog.LevelWarn) {
		return false
	}
	fn := runtime.FuncForPC(r.PC)
	if fn == nil {
		return false
	}
	name := fn.Name()
	if r.Level == slog.LevelWarn {
		return inModule(name, sdkModule) && strings.HasPrefix(r.Message, "calling notifications/") && strings.Contains(r.Message, "list_changed")
	}
	for _, m := range chattyModules {
		if inModule(name, m) {
			return true
		}
	}
	return false
}

// inModule reports whether the function named fn (as runtime names it:
// "path/to/pkg.Func" or "path/to/pkg.(*T).Method") is in module m or one
// of its packages.
func inModule(fn, m string) bool {
	rest, ok := strings.CutPrefix(fn, m)
	return ok && (strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, "."))
}
