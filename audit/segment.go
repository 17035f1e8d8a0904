package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// segment is one ledger file, numbered from 1.
type segment struct {
	index int
	path  string
}

func segmentName(index int) string { return fmt.Sprintf("ledger-%06d.jsonl", index) }

func segmentPath(dir string, index int) string { return filepath.Join(dir, segmentName(index)) }

// parseSegmentName returns the index of a file named ledger-NNNNNN.jsonl (at
// least six digits, no sign), or false.
func parseSegmentName(name string) (int, bool) {
	num, ok := strings.CutPrefix(name, "ledger-")
	if !ok {
		return 0, false
	}
	if num, ok = strings.CutSuffix(num, ".jsonl"); !ok || len(num) < 6 || len(num) > 12 {
		return 0, false
	}
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || segmentName(n) != name {
		return 0, false
	}
	return n, true
}

// listSegments returns dir's segments in index order, with paths under dir.
// A missing dir has none.
func listSegments(dir string) ([]segment, error) {
	segs, err := listSegmentsFS(os.DirFS(dir))
	for i := range segs {
		segs[i].path = filepath.Join(dir, segs[i].path)
	}
	return segs, err
}

// listSegmentsFS returns the segments at the root of fsys in index order,
// with paths relative to it.
func listSegmentsFS(fsys fs.FS) ([]segment, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("audit: list segments: %w", err)
	}
	var segs []segment
	for _, e := range ents {
		if n, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			segs = append(segs, segment{index: n, path: e.Name()})
		}
	}
	slices.SortFunc(segs, func(a, b segment) int { return a.index - b.index })
	return segs, nil
}

// splitTail finds where a segment's records end. Records never contain a
// zero byte (the encoding escapes every control character), and a segment
// is written strictly in order with each write durable before the next
// starts, so every acknowledged record lies before the first zero byte. good
// is the length of the complete lines before it. end is the offset after the
// last non-zero byte: [good, end) is a torn write (a crash mid-append; in a
// preallocated segment sectors can land out of order, so it may hold zero
// runs and even whole lines, none of them acknowledged), and [end, len) is
// unused preallocated space.
func splitTail(b []byte) (good, end int) {
	data := b
	if i := bytes.IndexByte(b, 0); i >= 0 {
		data = b[:i]
	}
	good = bytes.LastIndexByte(data, '\n') + 1
	end = len(b)
	for end > good && b[end-1] == 0 {
		end--
	}
	return good, end
}

// recordsEnd finds where Open resumes a live segment. A crash mid-append
// leaves only the intended bytes of the last write and zeros (preallocated
// or never written sectors), so a complete line without a zero byte is
// exactly what was written: a record. keep is the end of the last complete
// line that is a valid record (it parses and matches its hash); end is the
// offset after the last non-zero byte. [keep, end) is the torn final write:
// partial lines and lines holding zeros, none of them a complete record.
// Damage before keep (a zero byte planted in a record, a rewritten line) is
// never cut: Verify reports it, and the records after it stay. A complete
// zero-free line after the last record that is not one cannot come from a
// crash, so it is refused as corrupt.
func recordsEnd(b []byte) (keep, end int, err error) {
	end = len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	stop := end
	for {
		nl := bytes.LastIndexByte(b[:stop], '\n')
		if nl < 0 {
			return 0, end, nil
		}
		start := bytes.LastIndexByte(b[:nl], '\n') + 1
		if line := b[start:nl]; bytes.IndexByte(line, 0) < 0 {
			r, perr := ParseRecord(line)
			if perr == nil && r.ComputeHash() == r.Hash {
				return nl + 1, end, nil
			}
			if perr == nil {
				perr = fmt.Errorf("seq %d does not match its hash", r.Seq)
			}
			return 0, 0, fmt.Errorf("%w: the last complete line at offset %d: %v", ErrCorrupt, start, perr)
		}
		stop = start
	}
}
