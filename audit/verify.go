package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Report is what Verify found. Broken is false when every record is intact,
// the chain is continuous, every checkpoint is validly signed by the
// verifying key and the ledger reaches and agrees with every checkpoint.
type Report struct {
	Records        uint64 // records read and found intact
	LastSeq        uint64 // seq of the last intact record
	Head           string // hash of the last intact record (Genesis when empty)
	Segments       int    // segment files walked
	Checkpoints    int    // checkpoints read
	LastCheckpoint uint64 // seq of the newest checkpoint, 0 when none
	Unsealed       uint64 // intact records after the newest checkpoint (not yet provable against truncation)
	TornBytes      int64  // an incomplete final line left by a crash; the next Open cuts and records it
	KeyID          string // the verifying key's id, "" when no key was needed
	KeyFromDir     bool   // the key was read from the ledger dir, not pinned by the caller

	Broken   bool
	BrokenAt uint64 // the first seq that cannot be vouched for
	Reason   string
}

func (r *Report) breakAt(seq uint64, format string, args ...any) {
	r.Broken, r.BrokenAt, r.Reason = true, seq, fmt.Sprintf(format, args...)
}

// Verify walks every segment of the ledger in dir and checks canonical form,
// hashes, sequence continuity and linkage, then the checkpoints: signatures
// by pub and agreement with the records they cover. A nil pub means the
// checkpoint.pub stored in dir (weaker: Report.KeyFromDir says so). The
// error is for an unreadable ledger (fs.ErrNotExist for a missing dir);
// tampering is reported in Report, never as an error, and never panics.
func Verify(dir string, pub ed25519.PublicKey) (Report, error) {
	if fi, err := os.Stat(dir); err != nil {
		return Report{Head: Genesis}, fmt.Errorf("audit: verify: %w", err)
	} else if !fi.IsDir() {
		return Report{Head: Genesis}, fmt.Errorf("audit: verify: %s is not a directory", dir)
	}
	return VerifyFS(os.DirFS(dir), pub)
}

// VerifyFS is Verify over a ledger directory given as a file system (a
// copy, an archive, a test fixture).
func VerifyFS(fsys fs.FS, pub ed25519.PublicKey) (Report, error) {
	rep := Report{Head: Genesis}
	cps, cpErr := readCheckpoints(fsys)
	if cpErr != nil {
		return rep, cpErr
	}
	rep.TornBytes = cps.torn
	if len(cps.lines) > 0 && pub == nil {
		b, err := fs.ReadFile(fsys, pubKeyFile)
		if err != nil {
			return rep, fmt.Errorf("audit: verify: no public key given and none in the ledger dir: %w", err)
		}
		if pub, err = ParsePublicKey(b); err != nil {
			return rep, err
		}
		rep.KeyFromDir = true
	}
	if pub != nil {
		rep.KeyID = KeyID(pub)
	}

	// Checkpoints first: their seqs and hashes are checked during the walk.
	var checks []Checkpoint
	for i, line := range cps.lines {
		var prevSeq uint64
		if len(checks) > 0 {
			prevSeq = checks[len(checks)-1].Seq
		}
		c, err := parseCheckpoint(line)
		if err != nil {
			rep.breakAt(prevSeq+1, "checkpoint line %d: %v", i+1, err)
			return rep, nil
		}
		if err := c.verify(pub); err != nil {
			rep.breakAt(c.Seq, "checkpoint for seq %d: %v", c.Seq, err)
			return rep, nil
		}
		if c.Seq <= prevSeq {
			rep.breakAt(c.Seq, "checkpoint for seq %d follows one for seq %d", c.Seq, prevSeq)
			return rep, nil
		}
		checks = append(checks, c)
	}
	rep.Checkpoints = len(checks)
	if len(checks) > 0 {
		rep.LastCheckpoint = checks[len(checks)-1].Seq
	}

	segs, err := listSegmentsFS(fsys)
	if err != nil {
		return rep, err
	}
	next := 0 // index into checks of the next checkpoint to meet
	for i, s := range segs {
		rep.Segments++
		if s.index != i+1 {
			rep.breakAt(rep.LastSeq+1, "segment %s is missing", segmentName(i+1))
			return rep, nil
		}
		ok, err := verifySegment(&rep, fsys, s, i == len(segs)-1, checks, &next)
		if err != nil || !ok {
			return rep, err
		}
	}
	if next < len(checks) {
		c := checks[len(checks)-1]
		rep.breakAt(rep.LastSeq+1, "the ledger ends at seq %d but a signed checkpoint covers seq %d: records were truncated", rep.LastSeq, c.Seq)
		return rep, nil
	}
	rep.Unsealed = rep.LastSeq - rep.LastCheckpoint
	return rep, nil
}

// verifySegment checks one segment's lines, advancing rep. It reports false
// when it found a break.
func verifySegment(rep *Report, fsys fs.FS, s segment, last bool, checks []Checkpoint, next *int) (bool, error) {
	f, err := fsys.Open(s.path)
	if err != nil {
		return false, fmt.Errorf("audit: verify: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	name := s.path
	for lineNo := 1; ; lineNo++ {
		line, err := readLine(br)
		if z, ok := errors.AsType[*zeroError](err); ok {
			if !last {
				rep.breakAt(rep.LastSeq+1, "%s line %d holds a zero byte but is not the last segment", name, lineNo)
				return false, nil
			}
			// Either the end of the records (a torn write, then preallocated
			// zeros) or a damaged record with records after it, which Open
			// keeps and this reports (see recordsEnd).
			rest, err := io.ReadAll(br)
			if err != nil {
				return false, fmt.Errorf("audit: verify: read %s: %w", name, err)
			}
			tail := append(append(append(line, 0), z.after...), rest...)
			keep, end, cerr := recordsEnd(tail)
			if keep > 0 || cerr != nil {
				rep.breakAt(rep.LastSeq+1, "%s line %d holds a zero byte and complete lines follow it: a damaged record (kept for forensics)", name, lineNo)
				return false, nil
			}
			rep.TornBytes += int64(end)
			return true, nil
		}
		if errors.Is(err, io.EOF) {
			if len(line) == 0 {
				return true, nil
			}
			if last {
				rep.TornBytes += int64(len(line))
				return true, nil
			}
			rep.breakAt(rep.LastSeq+1, "%s ends mid-line but is not the last segment", name)
			return false, nil
		}
		if errors.Is(err, errLineTooLong) {
			rep.breakAt(rep.LastSeq+1, "%s line %d is longer than %d bytes", name, lineNo, maxLine)
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("audit: verify: read %s: %w", name, err)
		}
		want := rep.LastSeq + 1
		r, err := ParseRecord(line)
		switch {
		case err != nil:
			rep.breakAt(want, "%s line %d: %v", name, lineNo, err)
		case r.Seq > want:
			rep.breakAt(want, "seq %d follows seq %d: records are missing", r.Seq, rep.LastSeq)
		case r.Seq < want:
			rep.breakAt(want, "seq %d follows seq %d: records are repeated or out of order", r.Seq, rep.LastSeq)
		case r.PrevHash != rep.Head:
			rep.breakAt(want, "prev_hash does not match the hash of seq %d", rep.LastSeq)
		case r.ComputeHash() != r.Hash:
			rep.breakAt(want, "the record does not match its hash (altered)")
		case *next < len(checks) && checks[*next].Seq == r.Seq && checks[*next].Hash != r.Hash:
			rep.breakAt(want, "the record differs from the signed checkpoint for seq %d (rewritten)", r.Seq)
		}
		if rep.Broken {
			return false, nil
		}
		if *next < len(checks) && checks[*next].Seq == r.Seq {
			*next++
		}
		rep.Records++
		rep.LastSeq, rep.Head = r.Seq, r.Hash
	}
}

var errLineTooLong = errors.New("line too long")

// zeroError reports a zero byte: no record holds one, so the records end
// there. after is what the reader had consumed past the zero.
type zeroError struct{ after []byte }

func (*zeroError) Error() string { return "zero byte" }

// readLine returns the next line without its newline. At the end of input it
// returns the incomplete remainder (possibly empty) with io.EOF; at a zero
// byte, the bytes before it with a *zeroError.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		zero := bytes.IndexByte(chunk, 0)
		var after []byte
		if zero >= 0 {
			chunk, after = chunk[:zero], chunk[zero+1:]
		}
		if len(buf)+len(chunk) > maxLine+1 {
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		if zero >= 0 {
			// after aliases br's buffer: copy it before br reads again.
			return buf, &zeroError{after: bytes.Clone(after)}
		}
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return buf, err
		}
	}
}

type checkpointLines struct {
	lines [][]byte
	torn  int64
}

// readCheckpoints returns the complete lines of dir's checkpoints file (none
// when it does not exist) and the size of a torn final line.
func readCheckpoints(fsys fs.FS) (checkpointLines, error) {
	b, err := fs.ReadFile(fsys, checkpointFile)
	if errors.Is(err, fs.ErrNotExist) {
		return checkpointLines{}, nil
	}
	if err != nil {
		return checkpointLines{}, fmt.Errorf("audit: verify: read checkpoints: %w", err)
	}
	good := bytes.LastIndexByte(b, '\n') + 1
	out := checkpointLines{torn: int64(len(b) - good)}
	if good > 0 {
		out.lines = bytes.Split(b[:good-1], []byte("\n"))
	}
	// A final line that lacks only its newline still counts: otherwise
	// deleting one byte would make the newest checkpoint vanish.
	if rest := b[good:]; len(rest) > 0 {
		if _, err := parseCheckpoint(rest); err == nil {
			out.lines, out.torn = append(out.lines, rest), 0
		}
	}
	return out, nil
}

// Err returns nil for an intact ledger, or an error naming the first broken
// seq and the reason.
func (r Report) Err() error {
	if !r.Broken {
		return nil
	}
	return fmt.Errorf("audit: ledger broken at seq %d: %s", r.BrokenAt, r.Reason)
}
