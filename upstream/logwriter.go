package upstream

import (
	"bytes"
	"context"
	"log/slog"
	"sync"

	"golang.org/x/time/rate"
)

// lineLog is an io.Writer that turns an upstream's stderr into bounded log
// records: lines are cut at maxLine bytes, and records are rate limited so a
// chatty or hostile child cannot flood bastion's log; what is dropped is
// counted and reported with the next record that gets through.
type lineLog struct {
	log     *slog.Logger
	limit   *rate.Limiter
	maxLine int

	mu      sync.Mutex // guards the fields below; Write may be called from several goroutines
	partial []byte
	cut     bool // the current line was already cut at maxLine
	dropped int
}

func newLineLog(log *slog.Logger) *lineLog {
	return &lineLog{log: log, limit: rate.NewLimiter(20, 100), maxLine: 1024}
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := l.maxLine - len(l.partial); room > 0 {
			l.partial = append(l.partial, chunk[:min(room, len(chunk))]...)
		}
		if len(l.partial) >= l.maxLine && !l.cut && i < 0 {
			l.emitLocked(true)
			l.cut = true
		}
		if i < 0 {
			break
		}
		if !l.cut || len(l.partial) > 0 {
			l.emitLocked(l.cut)
		}
		l.partial, l.cut = l.partial[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineLog) emitLocked(truncated bool) {
	if len(l.partial) == 0 && !truncated {
		return
	}
	if !l.limit.Allow() {
		l.dropped++
		l.partial = l.partial[:0]
		return
	}
	attrs := []slog.Attr{slog.String("line", string(bytes.ToValidUTF8(l.partial, []byte("?"))))}
	if truncated {
		attrs = append(attrs, slog.Bool("truncated", true))
	}
	if l.dropped > 0 {
		attrs = append(attrs, slog.Int("dropped", l.dropped))
		l.dropped = 0
	}
	l.log.LogAttrs(context.Background(), slog.LevelInfo, "upstream stderr", attrs...)
	l.partial = l.partial[:0]
}
