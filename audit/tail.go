package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// TailOptions selects what Tail emits.
type TailOptions struct {
	// Last emits only the last Last existing records before following;
	// zero or negative means every record.
	Last int
	// Follow keeps polling for new records (across rotations) until ctx ends.
	Follow bool
	// Poll is the follow interval. Zero means 200ms.
	Poll time.Duration
}

// Tail calls fn with records of the ledger in dir in chain order. It reads
// without the write lock, so it runs beside a live gateway; an incomplete
// final line is left for the next poll. It does not verify the chain (that
// is Verify's job) but refuses a line that is not a canonical record. Tail
// returns fn's error, or ctx's error when following ends, or nil once it has
// read everything without Follow.
func Tail(ctx context.Context, dir string, opts TailOptions, fn func(Record) error) error {
	if opts.Poll <= 0 {
		opts.Poll = 200 * time.Millisecond
	}
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	pos, err := startPosition(segs, opts.Last)
	if err != nil {
		return err
	}
	t := &tailer{dir: dir, index: pos.index, offset: pos.offset}
	defer t.close()
	for {
		progressed, err := t.readAvailable(fn)
		if err != nil {
			return err
		}
		if progressed {
			continue
		}
		if !opts.Follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opts.Poll):
		}
	}
}

type position struct {
	index  int
	offset int64
}

// startPosition finds where the last n complete records begin (the first
// segment's start when n <= 0 or the ledger is shorter).
func startPosition(segs []segment, n int) (position, error) {
	if len(segs) == 0 {
		return position{index: 1}, nil
	}
	first := position{index: segs[0].index}
	if n <= 0 {
		return first, nil
	}
	for i := len(segs) - 1; i >= 0; i-- {
		b, err := os.ReadFile(segs[i].path)
		if err != nil {
			return position{}, fmt.Errorf("audit: tail: %w", err)
		}
		good, _ := splitTail(b)
		b = b[:good] // complete lines only
		for end := len(b) - 1; end >= 0; {
			start := bytes.LastIndexByte(b[:end], '\n') + 1
			if n--; n == 0 {
				return position{index: segs[i].index, offset: int64(start)}, nil
			}
			end = start - 1
		}
	}
	return first, nil
}

// tailer reads a ledger forward from a position, across segments.
type tailer struct {
	dir     string
	index   int
	offset  int64 // bytes of the current segment consumed (complete lines)
	f       *os.File
	br      *bufio.Reader
	partial []byte // an incomplete line waiting for its newline
	zero    bool   // the last drain stopped at a zero byte (the end of the records so far)
}

func (t *tailer) close() {
	if t.f != nil {
		t.f.Close()
	}
}

// readAvailable emits every complete line now readable, moving to the next
// segment when the current one is finished. It reports whether it emitted or
// moved.
func (t *tailer) readAvailable(fn func(Record) error) (bool, error) {
	if t.f == nil {
		f, err := os.Open(segmentPath(t.dir, t.index))
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("audit: tail: %w", err)
		}
		if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
			f.Close()
			return false, fmt.Errorf("audit: tail: %w", err)
		}
		t.f, t.br = f, bufio.NewReaderSize(f, 64<<10)
	}
	progressed := false
	for {
		// Check for a successor before draining: a writer creates the next
		// segment only after the current one is complete, so whatever we
		// read after seeing it is the whole rest of this segment.
		_, statErr := os.Stat(segmentPath(t.dir, t.index+1))
		hasNext := statErr == nil
		n, err := t.drain(fn)
		if err != nil {
			return progressed, err
		}
		progressed = progressed || n > 0
		if !hasNext {
			return progressed, nil
		}
		if len(t.partial) > 0 || t.zero {
			return progressed, fmt.Errorf("audit: tail: %s ends mid-line but is not the last segment", filepath.Base(segmentPath(t.dir, t.index)))
		}
		t.f.Close()
		t.f, t.br, t.index, t.offset = nil, nil, t.index+1, 0
		f, err := os.Open(segmentPath(t.dir, t.index))
		if err != nil {
			return progressed, fmt.Errorf("audit: tail: %w", err)
		}
		t.f, t.br = f, bufio.NewReaderSize(f, 64<<10)
		progressed = true
	}
}

// drain emits complete lines until EOF or a zero byte and returns how many
// it emitted.
func (t *tailer) drain(fn func(Record) error) (int, error) {
	n := 0
	t.zero = false
	for {
		chunk, err := t.br.ReadSlice('\n')
		if bytes.IndexByte(chunk, 0) >= 0 {
			// The writer preallocates segments: zeros are where the records
			// end for now (see splitTail). Rewind to the incomplete line so
			// the next poll reads it again once the writer has filled it in.
			t.zero, t.partial = true, t.partial[:0]
			if _, err := t.f.Seek(t.offset, io.SeekStart); err != nil {
				return n, fmt.Errorf("audit: tail: %w", err)
			}
			t.br.Reset(t.f)
			return n, nil
		}
		if len(t.partial)+len(chunk) > maxLine+1 {
			return n, fmt.Errorf("audit: tail: %s: line longer than %d bytes", filepath.Base(segmentPath(t.dir, t.index)), maxLine)
		}
		t.partial = append(t.partial, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, fmt.Errorf("audit: tail: %w", err)
		}
		line := t.partial[:len(t.partial)-1]
		r, perr := ParseRecord(line)
		t.offset += int64(len(t.partial))
		t.partial = t.partial[:0]
		if perr != nil {
			return n, fmt.Errorf("audit: tail: %s: %w", filepath.Base(segmentPath(t.dir, t.index)), perr)
		}
		if err := fn(r); err != nil {
			return n, err
		}
		n++
	}
}
