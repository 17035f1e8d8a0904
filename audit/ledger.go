// Package audit is bastion's append-only, hash-linked ledger of governed
// outcomes: every allow, deny, upstream error, timeout, trap and edge
// rejection becomes one record.
//
// Invariants:
//   - Records are canonical JSON lines (see Record) in numbered segment files
//     ledger-000001.jsonl, ledger-000002.jsonl, ...; seq starts at 1 and grows
//     by one with no gaps; each record's prev_hash is the previous record's
//     hash across segment boundaries; the first prev_hash is Genesis.
//   - Append returns only after its record is written and fsynced (group
//     commit: concurrent appenders share one durable write, made by one of
//     them; on Linux the segment is O_DSYNC, elsewhere the write is followed
//     by fsync). A request's cancellation never drops a record, and any
//     failure is returned so the caller fails the call closed.
//   - One writer per directory: Open takes an exclusive flock on ledger.lock,
//     so two processes cannot fork the chain.
//   - Signed Ed25519 checkpoints (checkpoints.jsonl) seal the chain every N
//     records, every T, and at Close; Verify reports a ledger that ends before
//     a signed checkpoint, or disagrees with one, as broken.
//   - The live segment is preallocated to MaxFileBytes where the file system
//     can (fallocate on Linux), so a durable append overwrites allocated
//     zeros instead of growing the file and committing its new size. No
//     record holds a zero byte, so zeros mark where the records written so
//     far end (Tail waits there); Open and Verify look past them for damage
//     (below). Rotation and Close cut a
//     segment back to its records, so only the live segment, or the last
//     one after a crash, carries zeros.
//   - Open repairs only a torn final write (the bytes after the last
//     complete, valid record, up to the last non-zero byte: partial lines and
//     lines holding zeros, what a crash mid-write leaves; see recordsEnd) and
//     then appends a "recovered" record saying how many bytes it cut.
//     Complete records are never cut: a damaged record before the last valid
//     one (a zero byte planted in it) stays for forensics and Verify reports
//     its seq; a complete zero-free line that fails its own hash is never
//     repaired: Open refuses and Verify says where.
//   - Fail closed, recover by itself: after a failed write, fsync or
//     checkpoint the ledger refuses every Append (Err says so) and drops
//     the records not yet durable, so the chain resumes at the durable head.
//     Every RetryInterval it cuts its files back to what is durable and
//     tries to append a "recovered" record (rule ledger:write-failed, with
//     how long and how many requests were refused); once that is durable it
//     takes appends again. No restart is needed.
//
// Limits: the signing key and the ledger sit on the same machine; a writer
// who can rewrite both files and read the key can forge a consistent ledger.
// Keep Options.KeyFile outside the ledger directory, pin the public key when
// verifying, and ship checkpoints off the machine (audit tail) for stronger
// guarantees.
package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
	"github.com/bastion-mcp/bastion/principal"
)

// File names inside a ledger directory.
const (
	lockFile       = "ledger.lock"
	checkpointFile = "checkpoints.jsonl"
	pubKeyFile     = "checkpoint.pub"
	defaultKeyFile = "checkpoint.key"
)

// Per-field size caps: longer values are cut (and marked "…") so a hostile
// tool name or reason cannot bloat the ledger.
const (
	maxShort  = 256
	maxTool   = 512
	maxReason = 2048
	// maxWarnings bounds Record.Warnings; a call with more says so in
	// the last one.
	maxWarnings = 16
)

// maxLine bounds one ledger line when reading; every line Append writes is
// far below it.
const maxLine = 64 << 10

var (
	// ErrLocked is returned by Open when another process (or another Ledger
	// in this one) holds the directory's write lock.
	ErrLocked = errors.New("audit: ledger is locked by another writer")
	// ErrClosed is returned by Append after Close.
	ErrClosed = errors.New("audit: ledger is closed")
	// ErrCorrupt is returned by Open when the ledger's tail is not a valid
	// record or ends before a signed checkpoint; run Verify to see where.
	ErrCorrupt = errors.New("audit: ledger is corrupt")
)

// Options tunes a Ledger. The zero value means the defaults below.
type Options struct {
	// MaxFileBytes starts a new segment once the current one would grow past
	// it. Zero means 64 MiB. A single group-commit batch is never split. The
	// live segment takes this much disk from the start (preallocated).
	MaxFileBytes int64
	// CheckpointEvery signs a checkpoint after this many new records. Zero
	// means 1000; negative disables the count trigger.
	CheckpointEvery int
	// CheckpointInterval signs a checkpoint this long after the last one when
	// records are unsealed. Zero means 30s; negative disables the timer.
	// Close always signs a final checkpoint.
	CheckpointInterval time.Duration
	// KeyFile is the Ed25519 signing key (PKCS#8 PEM), generated with mode
	// 0600 if missing. Empty means <dir>/checkpoint.key; production setups
	// should keep it outside the ledger directory.
	KeyFile string
	// RetryInterval is how often a failed ledger tries to write again (see
	// Err); zero means 1s. Appends are refused in between, without I/O.
	RetryInterval time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// OnCommit, if set, is told of every group commit: how many records it
	// held, how long their write and fsync took, and the write's error. It
	// runs on the committing appender's path, under the ledger's I/O lock,
	// so it must be quick (a metrics observation).
	OnCommit func(records int, took time.Duration, err error)
}

func (o Options) withDefaults(dir string) Options {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 64 << 20
	}
	if o.CheckpointEvery == 0 {
		o.CheckpointEvery = 1000
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = 30 * time.Second
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = time.Second
	}
	if o.KeyFile == "" {
		o.KeyFile = filepath.Join(dir, defaultKeyFile)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Entry is what a caller records; the Ledger adds seq, time and hashes.
type Entry struct {
	Principal principal.Principal // the zero Principal for unauthenticated requests
	RequestID string
	Method    string
	Server    string
	Tool      string
	Decision  Decision // required
	Rule      string
	Reason    string
	Latency   time.Duration
	Args      []byte // raw arguments; only their SHA-256 is stored
	Result    []byte // raw result; only its SHA-256 is stored
	// Attempt is the seq of the Attempting record this outcome completes
	// (0 when the request was never dispatched).
	Attempt uint64
	// Warnings are findings that did not deny, as "RULE: REASON"; at most
	// maxWarnings are kept.
	Warnings []string
	// TraceID is the OpenTelemetry trace id of the request, as 32 lowercase
	// hex digits (tracing.TraceID); "" when it was not traced. Anything
	// else is recorded as "".
	TraceID string
}

// Ledger appends records to one ledger directory. It is safe for concurrent
// use; Append blocks until its record is durable.
type Ledger struct {
	// Fixed at Open.
	dir  string
	opts Options
	key  ed25519.PrivateKey
	lock *os.File
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the sealer has exited

	mu       sync.Mutex // guards the fields below; never held across I/O
	seq      uint64     // last assigned seq
	head     string     // hash of the last assigned record
	cur      *batch     // records not yet being written
	writing  bool       // an appender is writing a batch; cur waits for it
	spare    []byte     // the last written batch's buffer, for the next batch
	err      error      // set while the ledger has failed (see fail); cleared by retry
	lastErr  error      // the latest failure, for batches a failure dropped
	gen      uint64     // failures so far: a batch of an older gen chains on dropped records
	failedAt time.Time  // when err was set
	refused  uint64     // Appends refused since
	closed   bool
	pending  sync.WaitGroup // Appends that were assigned a seq and have not returned

	// io serializes file I/O (an appender writing a batch, the sealer, Open
	// and Close) and guards the fields below.
	io          sync.Mutex
	seg         *os.File // written at segSize with WriteAt: it may be preallocated
	segIndex    int
	segSize     int64 // bytes of records in seg; past them, zeros or EOF
	ckpt        *os.File
	ckptSize    int64 // bytes of complete checkpoints in ckpt
	durableSeq  uint64
	durableHash string
	sealedSeq   uint64
	lastSeal    time.Time
	writes      uint64 // durable segment writes so far (group commits), for benchmarks
}

// batch is one group commit: the records appended while the previous batch
// was being written. Its first appender writes it when no write is under way;
// otherwise the appender that wrote the previous batch hands the job to one
// of this batch's waiters through lead. No goroutine sits between an
// appender and the disk: a lone appender writes its own record, with no
// wakeup of another goroutine on its path (each costs a wait for a P on a
// busy machine).
type batch struct {
	buf      []byte
	n        int
	lastSeq  uint64
	lastHash string
	gen      uint64        // the ledger's gen when the batch started
	lead     chan struct{} // capacity 1: a token telling one waiter to write this batch
	done     chan struct{} // closed after the write+fsync; err is then final
	err      error
}

func newBatch() *batch { return &batch{lead: make(chan struct{}, 1), done: make(chan struct{})} }

// Open opens (creating if needed) the ledger in dir for writing, takes its
// lock, repairs a torn tail and starts the checkpoint sealer. A second
// Open of the same dir fails with an error wrapping ErrLocked until Close.
func Open(dir string, opts Options) (*Ledger, error) {
	opts = opts.withDefaults(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", dir, err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open lock: %w", err)
	}
	if err := lockExclusive(lf); err != nil {
		lf.Close()
		return nil, fmt.Errorf("audit: %s: %w", dir, err)
	}
	l := &Ledger{dir: dir, opts: opts, lock: lf, stop: make(chan struct{}),
		done: make(chan struct{}), cur: newBatch()}
	notes, err := l.recover()
	if err != nil {
		l.closeFiles()
		return nil, err
	}
	go l.run()
	if len(notes) > 0 {
		// The repair itself is part of the history: record it in the chain.
		_, err := l.Append(context.Background(), Entry{Method: "open", Decision: Recovered, Rule: "open:torn-tail",
			Reason: fmt.Sprintf("truncated %s", joinNotes(notes))})
		if err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

func joinNotes(notes []string) string {
	s := notes[0]
	for _, n := range notes[1:] {
		s += "; " + n
	}
	return s
}

// recover loads the key, finds the chain head, truncates a torn tail and opens
// the files for appending. It returns a note per repair.
func (l *Ledger) recover() ([]string, error) {
	key, err := LoadOrCreateKey(l.opts.KeyFile)
	if err != nil {
		return nil, err
	}
	l.key = key
	pub := key.Public().(ed25519.PublicKey)
	if err := l.pinPublicKey(pub); err != nil {
		return nil, err
	}
	var notes []string

	segs, err := listSegments(l.dir)
	if err != nil {
		return nil, err
	}
	l.seq, l.head = 0, Genesis
	if len(segs) == 0 {
		segs = []segment{{index: 1, path: segmentPath(l.dir, 1)}}
	}
	last := segs[len(segs)-1]
	data, err := os.ReadFile(last.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("audit: read %s: %w", last.path, err)
	}
	good, end, err := recordsEnd(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, filepath.Base(last.path))
	}
	if torn := end - good; torn > 0 {
		notes = append(notes, fmt.Sprintf("%d torn bytes at the end of %s", torn, filepath.Base(last.path)))
	}
	if err := l.findHead(segs, data[:good]); err != nil {
		return nil, err
	}
	// openSegment's fsync matters even when nothing was cut: a process that
	// died between its write and its flush leaves records in the page cache
	// that this run reads as the chain head. An O_DSYNC write flushes only
	// its own bytes, so make theirs durable before building on them: a
	// machine crash must not keep our records and lose their parents.
	l.seg, err = l.openSegment(last.path, int64(good))
	if err != nil {
		return nil, err
	}
	l.segIndex, l.segSize = last.index, int64(good)

	// Checkpoints: repair a torn line too, and refuse a ledger that ends
	// before what was signed (it lost records since the last run).
	cpath := filepath.Join(l.dir, checkpointFile)
	cdata, err := os.ReadFile(cpath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("audit: read checkpoints: %w", err)
	}
	cgood := int64(bytes.LastIndexByte(cdata, '\n') + 1)
	completeLast := false
	if torn := int64(len(cdata)) - cgood; torn > 0 {
		if c, err := parseCheckpoint(cdata[cgood:]); err == nil && c.verify(pub) == nil {
			// Only the newline is missing: keep the checkpoint (Verify
			// honours it too) and finish the line below.
			cdata, cgood, completeLast = append(cdata, '\n'), int64(len(cdata))+1, true
		} else {
			notes = append(notes, fmt.Sprintf("%d torn bytes at the end of %s", torn, checkpointFile))
		}
	}
	if lines := bytes.Split(bytes.TrimSuffix(cdata[:cgood], []byte("\n")), []byte("\n")); cgood > 0 {
		c, err := parseCheckpoint(lines[len(lines)-1])
		if err != nil {
			return nil, fmt.Errorf("%w: last checkpoint: %v", ErrCorrupt, err)
		}
		if err := c.verify(pub); err != nil {
			return nil, fmt.Errorf("%w: last checkpoint: %v", ErrCorrupt, err)
		}
		if c.Seq > l.seq {
			return nil, fmt.Errorf("%w: the ledger ends at seq %d but checkpoint seq %d was signed (truncated)", ErrCorrupt, l.seq, c.Seq)
		}
		if c.Seq == l.seq && c.Hash != l.head {
			return nil, fmt.Errorf("%w: the last record (seq %d) differs from its signed checkpoint (rewritten)", ErrCorrupt, l.seq)
		}
		l.sealedSeq = c.Seq
	}
	if completeLast {
		cgood--
	}
	l.ckpt, err = openAppend(cpath, cgood, 0)
	if err != nil {
		return nil, err
	}
	l.ckptSize = cgood
	if completeLast {
		if _, err := l.ckpt.Write([]byte("\n")); err != nil {
			return nil, fmt.Errorf("audit: repair checkpoints: %w", err)
		}
		l.ckptSize++
		if err := l.ckpt.Sync(); err != nil {
			return nil, fmt.Errorf("audit: repair checkpoints: %w", err)
		}
	}
	if err := syncDir(l.dir); err != nil {
		return nil, err
	}
	l.durableSeq, l.durableHash = l.seq, l.head
	l.lastSeal = l.opts.Now()
	return notes, nil
}

// findHead sets seq and head from the last complete record, looking into the
// previous segment when the last one is empty (a crash right after rotation).
func (l *Ledger) findHead(segs []segment, lastGood []byte) error {
	data := lastGood
	for i := len(segs) - 1; i >= 0; i-- {
		if i < len(segs)-1 {
			var err error
			if data, err = os.ReadFile(segs[i].path); err != nil {
				return fmt.Errorf("audit: read %s: %w", segs[i].path, err)
			}
			if len(data) > 0 && data[len(data)-1] != '\n' {
				return fmt.Errorf("%w: %s ends mid-line but is not the last segment", ErrCorrupt, filepath.Base(segs[i].path))
			}
		}
		if len(data) == 0 {
			continue
		}
		body := data[:len(data)-1]
		line := body[bytes.LastIndexByte(body, '\n')+1:]
		r, err := ParseRecord(line)
		if err != nil {
			return fmt.Errorf("%w: last record of %s: %v", ErrCorrupt, filepath.Base(segs[i].path), err)
		}
		if r.ComputeHash() != r.Hash {
			return fmt.Errorf("%w: last record of %s (seq %d) does not match its hash", ErrCorrupt, filepath.Base(segs[i].path), r.Seq)
		}
		l.seq, l.head = r.Seq, r.Hash
		return nil
	}
	return nil
}

// pinPublicKey writes checkpoint.pub next to the ledger, or checks that the
// one there belongs to the signing key: a changed key would make every old
// checkpoint unverifiable, so it is refused rather than silently accepted.
func (l *Ledger) pinPublicKey(pub ed25519.PublicKey) error {
	p := filepath.Join(l.dir, pubKeyFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(p, EncodePublicKey(pub), 0o644); err != nil {
			return fmt.Errorf("audit: write public key: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: read public key: %w", err)
	}
	have, err := ParsePublicKey(b)
	if err != nil {
		return err
	}
	if !have.Equal(pub) {
		return fmt.Errorf("audit: signing key %s (key id %s) is not the key this ledger was sealed with (key id %s); key rotation is not supported",
			l.opts.KeyFile, KeyID(pub), KeyID(have))
	}
	return nil
}

// Dir returns the ledger's directory.
func (l *Ledger) Dir() string { return l.dir }

// PublicKey returns the key that verifies this ledger's checkpoints.
func (l *Ledger) PublicKey() ed25519.PublicKey { return l.key.Public().(ed25519.PublicKey) }

// Append records e and returns the record once it is durable. The request's
// ctx is used only for its values: cancellation cannot drop a record (a
// record that has a seq is written regardless), so Append may outlive a
// disconnected client. A non-nil error means the record may not be durable;
// the caller must fail its call closed. The error is a fault.Unavailable
// whose message is safe for clients and whose cause says why.
func (l *Ledger) Append(ctx context.Context, e Entry) (Record, error) {
	// Nothing below selects on ctx.Done (the context.WithoutCancel rule): once
	// the gateway has an outcome, a disconnect must not lose its record.
	_ = ctx
	if e.Decision == "" {
		return Record{}, fault.New(fault.InvalidArgument, "audit: an entry needs a decision")
	}
	if e.RequestID == "" {
		e.RequestID = NewRequestID()
	}
	r := Record{
		RequestID: clip.String(e.RequestID, maxShort), Method: clip.String(e.Method, maxShort),
		Server: clip.String(e.Server, maxShort), Tool: clip.String(e.Tool, maxTool), Decision: Decision(clip.String(string(e.Decision), maxShort)),
		Rule: clip.String(e.Rule, maxShort), Reason: clip.String(e.Reason, maxReason),
		ArgsSHA256: Digest(e.Args), ResultSHA256: Digest(e.Result), Attempt: e.Attempt,
		Warnings: clipAll(e.Warnings), Version: formatVersion,
	}
	if IsTraceID(e.TraceID) {
		r.TraceID = e.TraceID
	}
	if e.Principal.IsValid() {
		r.Tenant, r.Principal = clip.String(e.Principal.Tenant(), maxShort), clip.String(e.Principal.ID(), maxShort)
	}
	if e.Latency > 0 {
		r.LatencyUS = uint64(e.Latency / time.Microsecond)
	}

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return Record{}, fault.Wrap(ErrClosed, fault.Unavailable, "the audit ledger is closed; the call was refused")
	}
	if l.err != nil {
		err := l.err
		l.refused++
		l.mu.Unlock()
		return Record{}, fault.Wrap(err, fault.Unavailable, "the audit ledger cannot record calls; the call was refused")
	}
	r.Seq, r.PrevHash, r.Time = l.seq+1, l.head, l.opts.Now().UTC()
	b := l.cur
	b.buf = append(r.appendSealed(b.buf), '\n')
	b.n++
	b.lastSeq, b.lastHash = r.Seq, r.Hash
	l.seq, l.head = r.Seq, r.Hash
	lead := !l.writing
	l.writing = true
	l.pending.Add(1)
	l.mu.Unlock()
	defer l.pending.Done()

	if !lead {
		select {
		case <-b.done:
		case <-b.lead:
			lead = true
		}
	}
	if lead {
		l.commit(b)
	}
	if b.err != nil {
		return Record{}, fault.Wrap(b.err, fault.Unavailable, "the audit ledger could not record this call; it was refused")
	}
	return r, nil
}

// Close writes what is pending, signs a final checkpoint and releases the
// lock. Appends after Close fail with ErrClosed.
func (l *Ledger) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	// No Append gets a seq from now on; wait for those that have one, so
	// every assigned record is written (or failed) before the final seal.
	l.pending.Wait()
	close(l.stop)
	<-l.done
	l.io.Lock()
	defer l.io.Unlock()
	l.sealNow()
	l.mu.Lock()
	err := l.err
	l.mu.Unlock()
	if err == nil {
		// A cleanly closed segment holds only records, as if it had never
		// been preallocated. After a failure the state on disk is unknown:
		// leave it to the next Open's recovery.
		if err = l.seg.Truncate(l.segSize); err == nil {
			err = l.seg.Sync()
		}
		if err != nil {
			err = fmt.Errorf("audit: close: %w", err)
		}
	}
	if cerr := l.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

func (l *Ledger) closeFiles() error {
	var first error
	for _, f := range []*os.File{l.seg, l.ckpt, l.lock} {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// run is the sealer: it signs checkpoints on the interval, and retries
// writing while the ledger has failed. The appender that commits a batch
// signs on the count trigger; Close signs the last one.
func (l *Ledger) run() {
	defer close(l.done)
	var tick <-chan time.Time
	if l.opts.CheckpointInterval > 0 {
		t := time.NewTicker(l.opts.CheckpointInterval)
		defer t.Stop()
		tick = t.C
	}
	again := time.NewTicker(l.opts.RetryInterval)
	defer again.Stop()
	for {
		select {
		case <-again.C:
			if l.Err() != nil {
				l.retry()
			}
		case <-tick:
			l.io.Lock()
			if l.opts.Now().Sub(l.lastSeal) >= l.opts.CheckpointInterval {
				l.sealNow()
			}
			l.io.Unlock()
		case <-l.stop:
			return
		}
	}
}

// commit writes b (the caller leads it), wakes its appenders, and hands the
// lead to a waiter of the next batch if one gathered meanwhile, else marks
// the ledger idle. A batch that a failure dropped (fail) is already done:
// its leader only passes the lead on.
func (l *Ledger) commit(b *batch) {
	l.mu.Lock()
	if l.cur == b {
		l.cur = newBatch()
		l.cur.gen = l.gen
		l.cur.buf, l.spare = l.spare, nil
	}
	l.mu.Unlock()

	l.io.Lock()
	select {
	case <-b.done: // dropped by a failure before it was written
	default:
		l.mu.Lock()
		err, gen := l.err, l.gen
		l.mu.Unlock()
		if err == nil && b.gen != gen {
			// Its records chain on records a failure dropped since.
			err = l.lastErr
		}
		if err == nil {
			start := time.Now()
			err = l.write(b.buf)
			if l.opts.OnCommit != nil {
				l.opts.OnCommit(b.n, time.Since(start), err)
			}
		}
		if err == nil {
			l.durableSeq, l.durableHash = b.lastSeq, b.lastHash
		} else {
			l.fail(err)
		}
		b.err = err
		close(b.done)
		// The count trigger seals exactly at the batch that crosses it,
		// before any later batch is written; its cost lands on this
		// appender once per CheckpointEvery records.
		if n := l.opts.CheckpointEvery; err == nil && n > 0 && l.durableSeq-l.sealedSeq >= uint64(n) {
			l.sealNow()
		}
	}
	l.io.Unlock()

	l.mu.Lock()
	// The appenders copied their records out of buf before waiting
	// (Append returns a Record, not bytes), so the next batch can reuse it.
	if cap(b.buf) <= maxSpare && b.err == nil {
		l.spare = b.buf[:0]
	}
	if l.cur.n > 0 {
		l.cur.lead <- struct{}{} // writing stays true: the lead passes on
	} else {
		l.writing = false
	}
	l.mu.Unlock()
}

// maxSpare bounds the batch buffer kept for reuse, so one burst of
// appenders does not pin a large buffer for the ledger's lifetime.
const maxSpare = 1 << 20

func (l *Ledger) write(buf []byte) error {
	if l.segSize > 0 && l.segSize+int64(len(buf)) > l.opts.MaxFileBytes {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	// segSize moves only once the bytes are durable: a failed write may
	// have left part of buf on disk, and repair cuts back to segSize.
	if _, err := l.seg.WriteAt(buf, l.segSize); err != nil {
		return fmt.Errorf("audit: write: %w", err)
	}
	if !writeIsDurable {
		if err := l.seg.Sync(); err != nil {
			return fmt.Errorf("audit: fsync: %w", err)
		}
	}
	l.segSize += int64(len(buf))
	l.writes++
	return nil
}

// rotate starts the next segment. The current one is first cut to its
// records (dropping its preallocated zeros) and fsynced, so a reader that
// sees the new file knows the old one is complete and holds only records.
func (l *Ledger) rotate() error {
	if err := l.seg.Truncate(l.segSize); err != nil {
		return fmt.Errorf("audit: rotate: %w", err)
	}
	if err := l.seg.Sync(); err != nil {
		return fmt.Errorf("audit: rotate: fsync: %w", err)
	}
	next := l.segIndex + 1
	// Not exclusive: a rotation that failed after creating the file (a
	// full disk, a read-only directory) left it empty, and we hold the lock.
	f, err := l.openSegment(segmentPath(l.dir, next), 0)
	if err != nil {
		return fmt.Errorf("audit: rotate: %w", err)
	}
	if err := syncDir(l.dir); err != nil {
		f.Close()
		return err
	}
	old := l.seg
	l.seg, l.segIndex, l.segSize = f, next, 0
	if err := old.Close(); err != nil {
		return fmt.Errorf("audit: rotate: close: %w", err)
	}
	return nil
}

// sealNow signs a checkpoint over the last durable record, if it is not
// sealed yet. A failed checkpoint write is a ledger failure like any other.
// The caller holds io.
func (l *Ledger) sealNow() {
	l.lastSeal = l.opts.Now()
	if l.durableSeq == l.sealedSeq {
		return
	}
	l.mu.Lock()
	failed := l.err != nil
	l.mu.Unlock()
	if failed {
		return
	}
	c := Checkpoint{Seq: l.durableSeq, Hash: l.durableHash, Time: l.lastSeal.UTC()}
	c.sign(l.key)
	line := append(c.appendJSON(nil, true), '\n')
	if _, err := l.ckpt.Write(line); err != nil {
		l.fail(fmt.Errorf("audit: write checkpoint: %w", err))
		return
	}
	if err := l.ckpt.Sync(); err != nil {
		l.fail(fmt.Errorf("audit: fsync checkpoint: %w", err))
		return
	}
	l.ckptSize += int64(len(line))
	l.sealedSeq = c.Seq
}

// openSegment opens the segment at path for writing at size (creating it),
// cuts anything past size (a torn tail), preallocates
// it to MaxFileBytes where the file system can, and fsyncs it all.
func (l *Ledger) openSegment(path string, size int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|segmentSyncFlag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", filepath.Base(path), err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != size {
		err = f.Truncate(size)
	}
	if err == nil && size < l.opts.MaxFileBytes {
		_, err = preallocate(f, l.opts.MaxFileBytes)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: prepare %s: %w", filepath.Base(path), err)
	}
	return f, nil
}

// openAppend opens path for appending with the extra open flags, creating
// it, and cuts it to size (a torn tail) durably.
func openAppend(path string, size int64, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", filepath.Base(path), err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != size {
		if err = f.Truncate(size); err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: repair %s: %w", filepath.Base(path), err)
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit: sync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit: sync dir: %w", err)
	}
	return nil
}
